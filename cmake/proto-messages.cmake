# proto-messages.cmake - copy a .proto without its `service` blocks (cmake -DIN=... -DOUT=... -P).
#
# protoc-c 1.4 also emits protobuf-c RPC stubs for services, and for the kubelet's
# `Registration` service it names a struct member `register`, a C keyword: the generated
# header does not compile. gpusched does its own gRPC (lib/agent/grpc.c) and needs only the
# messages, so protoc-c gets this copy; the services stay in the source .proto (the Python
# kubelet peer in tests/agent/ compiles that one). A service block is
# "service Name {" ... "}" whose body holds only rpc lines with "{}" option blocks.
file(READ "${IN}" text)
string(REGEX REPLACE "\nservice [A-Za-z0-9_]+ {([^{}]|{})*}" "\n" text "${text}")
if(text MATCHES "\nservice ")
  message(FATAL_ERROR "${IN}: a service block the stripper does not understand")
endif()
file(WRITE "${OUT}" "${text}")
