// train::FreeLoopbackPort: a port a listener can bind on 127.0.0.1.
#include "placeflow/train/free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testing/test_util.h"

namespace pf::free_port_test {
namespace {

TEST_CASE("FreeLoopbackPort gives a port that can be bound", "[train][free_port]") {
  const int port = train::FreeLoopbackPort();
  CHECK(port > 0);
  CHECK(port < 65536);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  // While it is taken, the next free port is another one.
  CHECK(train::FreeLoopbackPort() != port);
  ::close(fd);
}

}  // namespace
}  // namespace pf::free_port_test
