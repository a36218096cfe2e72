/* main.c - the gpusched command (placeholder until the command table lands). */
#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    puts("gpusched");
    return 0;
}
