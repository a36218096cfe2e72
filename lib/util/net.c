/*
 * net.c - the listening TCP socket of the servers (the webhook, the monitor): a numeric
 * IPv4 or IPv6 address (an IPv6 socket is IPv6 only), SO_REUSEADDR, non-blocking (the
 * HTTP library's threads accept from it), bound before anything starts so that "address
 * in use" is a clear error at start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpusched/util.h"

int gs_tcp_listen(const char *host, uint16_t port, int backlog, uint16_t *bound, bool *v6, gs_error *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
    int grc = getaddrinfo(host && host[0] ? host : NULL, portstr, &hints, &res);
    if (grc != 0 || !res)
        return gs_fail(err, GS_ERR_USAGE, "listen address \"%s\": %s (give a numeric IPv4 or IPv6 address)",
                       host ? host : "", gai_strerror(grc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return gs_fail(err, GS_ERR_IO, "socket: %s", strerror(errno));
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (res->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    *v6 = res->ai_family == AF_INET6;
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        freeaddrinfo(res);
        close(fd);
        return gs_fail(err, GS_ERR_IO, "cannot listen on %s port %u: %s", host, (unsigned)port, strerror(e));
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        close(fd);
        return gs_fail(err, GS_ERR_IO, "getsockname: %s", strerror(errno));
    }
    *bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}
