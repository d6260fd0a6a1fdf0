#include <catch2/catch.hpp>

#include "core/update/release.hpp"

using namespace ezpz::core;

namespace {

const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');

}  // namespace

TEST_CASE("release: SHA256SUMS lines, anything else ignored", "[release]") {
  const auto files = parse_sha256sums(kA + "  ezpz-0.1.0-linux-x86_64.tar.gz\n" + "junk\n" + std::string(64, 'z') +
                                      "  bad.tar.gz\n" + kB + "  install.sh");
  REQUIRE(files.size() == 2);
  CHECK(files[0].sha256 == kA);
  CHECK(files[0].name == "ezpz-0.1.0-linux-x86_64.tar.gz");
  CHECK(files[1].name == "install.sh");
}

TEST_CASE("release: versions compare by number, not by text", "[release]") {
  CHECK(compare_versions("0.10.0", "0.9.1") > 0);
  CHECK(compare_versions("0.9.1", "0.10.0") < 0);
  CHECK(compare_versions("1.0", "1.0.0") == 0);
  CHECK(compare_versions("0.1.0", "0.1.0") == 0);
  CHECK(compare_versions("2", "10") < 0);
}

TEST_CASE("release: the newest build for this machine, or the version asked for", "[release]") {
  const std::vector<ReleaseFile> files{{kA, "ezpz-0.9.0-linux-x86_64.tar.gz"},
                                       {kB, "ezpz-0.10.0-linux-x86_64.tar.gz"},
                                       {kC, "ezpz-0.11.0-linux-aarch64.tar.gz"},
                                       {kC, "install.sh"}};
  auto newest = choose_release(files, "x86_64", std::nullopt, "URL/SHA256SUMS");
  REQUIRE(newest);
  CHECK(newest->version == "0.10.0");
  CHECK(newest->sha256 == kB);
  auto asked = choose_release(files, "x86_64", std::string("0.9.0"), "URL/SHA256SUMS");
  REQUIRE(asked);
  CHECK(asked->name == "ezpz-0.9.0-linux-x86_64.tar.gz");
  CHECK(choose_release(files, "aarch64", std::nullopt, "U")->version == "0.11.0");
  auto missing = choose_release(files, "x86_64", std::string("9.9.9"), "URL/SHA256SUMS");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message ==
        "URL/SHA256SUMS does not list ezpz-9.9.9-linux-x86_64.tar.gz: no such version for linux-x86_64");
  CHECK(choose_release(files, "ppc64le", std::nullopt, "U").error().message == "U lists no build for linux-ppc64le");
}

TEST_CASE("release: HTTPS, or plain HTTP to this machine only", "[release]") {
  CHECK(check_release_url("https://github.com/saforem2/ezpz/releases/latest/download"));
  CHECK(check_release_url("http://127.0.0.1:8000/latest"));
  CHECK(check_release_url("http://localhost/x"));
  CHECK(check_release_url("http://[::1]:8080/x"));
  for (const char* bad :
       {"http://example.com/ezpz", "http://127.0.0.1.example.com/x", "ftp://127.0.0.1/x", "file:///tmp/x"}) {
    INFO(bad);
    auto r = check_release_url(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("not HTTPS") != std::string::npos);
  }
}

TEST_CASE("release: refused inside a batch job, named by its variable", "[release]") {
  Env env;
  CHECK(batch_job_variable(env).empty());
  env.vars["PBS_JOBID"] = "12.pbs";
  CHECK(batch_job_variable(env) == "PBS_JOBID=12.pbs");
  env.vars["SLURM_JOB_ID"] = "7";
  CHECK(batch_job_variable(env) == "SLURM_JOB_ID=7");
}

TEST_CASE("release: curl or wget, failing on an HTTP error", "[release]") {
  CHECK(fetch_argv("/usr/bin/curl", "https://x/S", "/t/S") ==
        std::vector<std::string>{"/usr/bin/curl", "-fsSL", "--retry", "2", "--connect-timeout", "20", "-o", "/t/S",
                                 "https://x/S"});
  CHECK(fetch_argv("/usr/bin/wget", "https://x/S", "/t/S") ==
        std::vector<std::string>{"/usr/bin/wget", "-q", "-T", "20", "-O", "/t/S", "https://x/S"});
}

TEST_CASE("release: the release key from a site's variable over the build's, none when neither", "[release]") {
  const std::string built(64, 'a');
  const std::string none(64, '.');
  const std::string site = "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef";
  CHECK(release_key(none, std::nullopt).value() == std::nullopt);
  CHECK(release_key(built, std::nullopt).value() == built);
  CHECK(release_key(built, " " + site + "\n").value() ==
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  CHECK(release_key(none, "").value() == std::nullopt);  // set but empty: as unset, never a way to pass a check
  CHECK(release_key(built, "").value() == built);
  for (const char* bad :
       {"abc", "-----BEGIN PUBLIC KEY-----", "zz23456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
    INFO(bad);
    auto r = release_key(built, std::string(bad));
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("EZPZ_RELEASE_PUBLIC_KEY is not an Ed25519 public key") == 0);
  }
}
