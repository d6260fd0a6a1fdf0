// The launcher transport on a shared node: another user who finds the head's registration port or
// an agent's port (/proc/net/tcp names them) and opens silent or hello-only connections to it
// delays no registration and takes no session from the run; the listeners bind the address their
// peers dial where it is known; a step that failed is explained by what its agents said.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/reach/agents.hpp"
#include "sys/agents/agent.hpp"
#include "sys/agents/agent_transport.hpp"
#include "sys/agents/net.hpp"
#include "sys/agents/secure_channel.hpp"
#include "sys/os/owned.hpp"
#include "unit/sys/agents/strangers.hpp"

using namespace ezpz;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// A directory of this test's own, removed with it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = (fs::temp_directory_path() / "ezpz-agents-XXXXXX").string();
    REQUIRE(::mkdtemp(name.data()) != nullptr);
    path = name;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// The text of `path` once it exists (at most 30 s).
std::string wait_for_file(const fs::path& path) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!fs::exists(path) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A launcher step that starts no agent (the test is the agent): `script` run by sh in `dir`,
/// as a launcher would run /home/u/bin/ezpz __yeet-agent.
core::ReachSpec step_spec(const fs::path& dir, const std::string& script) {
  core::ReachSpec spec;
  spec.transport = core::TransportKind::launcher;
  spec.agent_step = {"sh", "-c", "cd " + dir.string() + " && " + script, "/home/u/bin/ezpz", "__yeet-agent"};
  spec.agent_head = "127.0.0.1";
  spec.agent_timeout_s = 40;
  return spec;
}

/// An agent of the run registering with the head at `head` as `name`: its channel, and the
/// head's answer's type in `answer`.
std::optional<sys::SecureChannel> register_agent(const std::string& head, const sys::Secret& secret,
                                                 const std::string& name, char& answer) {
  std::string why;
  auto ch = sys::SecureChannel::open(sys::connect_to(head, 5000, why), sys::SecureChannel::Role::client, secret,
                                     sys::SecureChannel::Sealing::encrypt, 30000, why);
  std::string data;
  if (!ch || !ch->send('H', nlohmann::json{{"names", nlohmann::json::array({name})}, {"port", 4242}}.dump()) ||
      !ch->await(answer, data, 30000)) {
    return std::nullopt;
  }
  return ch;
}

}  // namespace

TEST_CASE("agent step: strangers at the registration port hold up no agent", "[agents]") {
  TempDir dir;
  sys::AgentTransport transport;
  const auto spec =
      step_spec(dir.path,
                "printf '%s %s' \"$EZPZ_YEET_SECRET\" \"$EZPZ_YEET_HEAD\" > said.tmp && mv said.tmp said && "
                "while [ ! -e done ]; do sleep 0.05; done");
  auto opening =
      std::async(std::launch::async, [&] { return transport.open_nodes({"nodeA"}, spec, nullptr, nullptr); });
  const auto said = wait_for_file(dir.path / "said");
  const auto space = said.find(' ');
  REQUIRE(space != std::string::npos);
  const auto secret = sys::secret_from_hex(said.substr(0, space));
  const auto head = said.substr(space + 1);
  REQUIRE(secret);
  CHECK(test::listening_address(test::port_of(head)) == "0100007F");  // the address the agents dial
  // Eight strangers ahead of the agent, half of them sending a hello they cannot follow with a
  // proof: a head that took them one at a time (2 s apiece) would answer the agent after 16 s.
  auto strangers = test::silent_strangers(head, 8);
  for (std::size_t i = 0; i < 4; ++i) {
    test::send_hello_only(strangers[i]);
  }
  const auto start = Clock::now();
  char answer = 0;
  auto agent = register_agent(head, *secret, "nodeA", answer);
  REQUIRE(agent);
  CHECK(answer == 'A');
  CHECK(Clock::now() - start < std::chrono::seconds(8));
  CHECK(opening.get().empty());  // every node has its agent
  std::ofstream(dir.path / "done").close();
  agent.reset();  // the agent ends: the head's end does not wait for it
  transport.close_nodes();
}

TEST_CASE("agent step: agents that ran and could not register are not told to copy ezpz", "[agents]") {
  TempDir dir;
  sys::AgentTransport transport;
  // Every agent ran, and each said why it failed: ezpz is there.
  const auto ran = transport.open_nodes(
      {"nodeA"}, step_spec(dir.path, "echo 'ezpz agent: 10.0.0.1:4000: no handshake from the head' >&2"), nullptr,
      nullptr);
  REQUIRE(ran.count("nodeA") == 1);
  CHECK_THAT(ran.at("nodeA"), Catch::Contains("before any agent called back"));
  CHECK_THAT(ran.at("nodeA"), Catch::Contains("no handshake from the head"));
  CHECK_THAT(ran.at("nodeA"), !Catch::Contains("copy ezpz"));
  // The binary could not run: that is the hint.
  const auto missing = transport.open_nodes(
      {"nodeA"}, step_spec(dir.path, "echo 'sh: 1: /home/u/bin/ezpz: not found' >&2; exit 127"), nullptr, nullptr);
  REQUIRE(missing.count("nodeA") == 1);
  CHECK_THAT(missing.at("nodeA"), Catch::Contains("can every node run /home/u/bin/ezpz?"));
}

TEST_CASE("agent: strangers at its port take no session from the run's clients", "[agents]") {
  const auto secret = sys::new_secret();
  REQUIRE(secret);
  std::string why;
  auto head = sys::listen_on("127.0.0.1", why);
  REQUIRE(head);
  const pid_t pid = ::fork();
  if (pid == 0) {  // the agent, as a launcher starts it
    ::setenv(std::string(core::kSecretVar).c_str(), sys::secret_hex(*secret).c_str(), 1);
    ::setenv(std::string(core::kHeadVar).c_str(), ("127.0.0.1:" + std::to_string(head->port)).c_str(), 1);
    ::_exit(sys::agent_main({}));
  }
  REQUIRE(pid > 0);
  sys::OwnedChild agent(pid);
  // The head's side: the agent's registration, answered with an empty directory.
  pollfd p{head->fd.get(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 30000) == 1);
  auto control = sys::SecureChannel::open(sys::accept_one(head->fd.get()), sys::SecureChannel::Role::server, *secret,
                                          sys::SecureChannel::Sealing::encrypt, 30000, why);
  REQUIRE(control);
  char type = 0;
  std::string data;
  REQUIRE(control->await(type, data, 30000));
  REQUIRE(type == 'H');
  const int port = nlohmann::json::parse(data)["port"].get<int>();
  REQUIRE(control->send('A', core::encode_directory({})));
  const auto address = "127.0.0.1:" + std::to_string(port);
  CHECK(test::listening_address(port) == "0100007F");  // where it called the head from
  // More strangers than the agent runs sessions at once, some of them after a hello.
  const auto start = Clock::now();
  auto strangers = test::silent_strangers(address, 100);
  for (std::size_t i = 0; i < 20; ++i) {
    test::send_hello_only(strangers[i]);
  }
  // A client of the run is served all the same: its command (not one an agent runs) refused.
  auto client = sys::SecureChannel::open(sys::connect_to(address, 5000, why), sys::SecureChannel::Role::client, *secret,
                                         sys::SecureChannel::Sealing::encrypt, 20000, why);
  REQUIRE(client);
  REQUIRE(client->send('Q', R"(["not-a-row"])"));
  REQUIRE(client->await(type, data, 20000));
  CHECK(type == 'N');
  CHECK_THAT(data, Catch::Contains("an agent runs only"));
  CHECK(Clock::now() - start < std::chrono::seconds(8));
  // Nothing else connects: each stranger is closed at its deadline.
  for (const auto& s : strangers) {
    CHECK(test::closed_by_peer(
        s, std::chrono::duration_cast<std::chrono::milliseconds>(start + std::chrono::seconds(20) - Clock::now())));
  }
  control.reset();  // the run is over: the agent ends
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::optional<int> status;
  while (!(status = agent.try_wait()) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
}
