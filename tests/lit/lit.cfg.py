# -*- Python -*-
# lit configuration of attnc: every test runs the built tools through
# FileCheck/not from LLVM 22.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "attnc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".attn", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_obj_root, "tests", "lit")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attnc_src", config.attnc_src_root))
# The C compiler of the build: generated headers must compile as C99.
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%attnc_rt", config.attnc_rt_lib))

# attnc run and the runtime cache compiled kernels: keep them in the build.
config.environment["ATTNC_CACHE_DIR"] = os.path.join(config.test_exec_root,
                                                     "attnc-cache")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# FileCheck, not, count come from LLVM 22; the project's tools from the build.
tool_dirs = [config.attnc_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attnc", "FileCheck", "not", "count", "llvm-nm",
         "mlir-runner", "mlir-opt"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# What mlir-runner links a test with to print memrefs (mlir-22-tools and
# libmlir-22-dev, next to the tools).
llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
for name in ["mlir_runner_utils", "mlir_c_runner_utils"]:
    config.substitutions.append(
        ("%" + name, os.path.join(llvm_lib_dir, "lib" + name + ".so")))

# The sanitize preset's build: a plain C host cannot link its attnc_rt.
if config.attnc_sanitized:
    config.available_features.add("sanitizers")

# --backend=halide: built only with Halide 21 (tests of it REQUIRE halide;
# those of a build without it UNSUPPORTED: halide).
if config.attnc_have_halide:
    config.available_features.add("halide")

# The CUDA toolkit (libdevice; ptxas) that --target=nvptx uses, where attnc
# looks for it (attnc::findCudaToolkit): GPU tests need it, not a GPU.
for root in [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             "/usr/local/cuda", "/usr/lib/cuda"]:
    if root and os.path.isfile(
            os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")):
        config.available_features.add("cuda-toolkit")
        ptxas = os.path.join(root, "bin", "ptxas")
        if os.access(ptxas, os.X_OK):
            config.available_features.add("ptxas")
            config.substitutions.append(("%ptxas", ptxas))
        break
for variable in ["CUDA_HOME", "CUDA_PATH"]:
    if variable in os.environ:
        config.environment[variable] = os.environ[variable]
