# Spack package for ezpz: `spack repo add packaging/spack` is not needed; copy this directory into
# a Spack repo (e.g. $SPACK_ROOT/var/spack/repos/builtin/packages/ezpz) or use it from a local repo:
#   spack repo create myrepo && cp -r packaging/spack/ezpz myrepo/packages/ && spack install ezpz
from spack.package import *


class Ezpz(CMakePackage):
    """Launch distributed PyTorch jobs on any supercomputer (PBS, Slurm) and laptops with zero
    code changes; copy Python environments to node-local storage on every node (yeet)."""

    homepage = "https://github.com/saforem2/ezpz"
    git = "https://github.com/saforem2/ezpz.git"

    maintainers("ezpz-developers")
    license("MIT")

    version("main", branch="main")

    variant("static", default=True, description="One fully static binary (needs static libraries)")
    variant("torch", default=False, description="Build libezpz_torch.so and ezpz-test-train")

    depends_on("cmake@3.25:", type="build")
    depends_on("ninja", type="build")
    depends_on("cli11")
    depends_on("nlohmann-json")
    depends_on("spdlog")
    depends_on("fmt")
    depends_on("tomlplusplus")
    depends_on("libarchive+iconv~xar compression=zstd")
    depends_on("zstd")
    depends_on("nettle")
    depends_on("libssh")
    depends_on("openssl")
    depends_on("librsync")
    depends_on("catch2@2", type="test")
    depends_on("py-torch", when="+torch")

    generator("ninja")

    def cmake_args(self):
        return [
            self.define_from_variant("EZPZ_STATIC", "static"),
            self.define_from_variant("EZPZ_TORCH", "torch"),
            self.define("EZPZ_BUILD_TESTS", self.run_tests),
        ]
