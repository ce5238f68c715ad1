# lit configuration for tlm: .mlir tests under Dialect/, Conversion/, Common/,
# CPU/, GPU/, Pipelines/ and the .test files of tlm-run/ and tools/
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "TLM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tlm_obj_root, "tests")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "Inputs", "fuzz"]

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# tlm-run's compile cache: one folder for the test run, never the user's.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.tlm_obj_root,
                                                    "tests", "cache")
# Progress lines (tools/common/Progress.h) depend on how fast the machine
# is; off in the tests, except where a test sets the threshold itself.
config.environment["TLM_PROGRESS_AFTER_MS"] = "100000000"
llvm_config.add_tool_substitutions(
    ["tlm-opt", "tlm-run", "tlm-exec", "tlm-gemm-bench", "tlm-c-generate",
     "mlir-translate"],
    [config.tlm_tools_dir, config.llvm_tools_dir])

# Tests of x86 instruction sets (compile --cpu).
import platform
if platform.machine() == "x86_64":
    config.available_features.add("x86_64")

# --compute bf16 runs vdpbf16ps, int8 vpdpbusd: hosts with AVX512-BF16 or
# AVX512-VNNI only.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = cpuinfo.read()
        if " avx512_bf16" in flags:
            config.available_features.add("avx512bf16")
        if " avx512_vnni" in flags:
            config.available_features.add("avx512vnni")
except OSError:
    pass

config.substitutions.append(("%tlm_build", config.tlm_obj_root))
# `%exit-stderr CMD ...` prints CMD's stderr then "exit N"; `%exit-output`
# prints stdout and stderr then "exit N" (tests/exit-status.sh).
exit_status = os.path.join(config.tlm_src_root, "tests", "exit-status.sh")
config.substitutions.append(("%exit-stderr", f"sh {exit_status} stderr"))
config.substitutions.append(("%exit-output", f"sh {exit_status} output"))
config.substitutions.append(("%fake_cuda", os.path.join(config.tlm_obj_root, "tests", "fake-cuda")))
config.substitutions.append(("%examples", os.path.join(config.tlm_src_root, "examples")))
config.substitutions.append(("%tools", os.path.join(config.tlm_src_root, "tools")))
import subprocess
import sys
def python_with(module):
    """The first interpreter that imports `module` (Debian's python3-* packages
    live in the system one), or None."""
    for candidate in [sys.executable, "/usr/bin/python3"]:
        if os.path.exists(candidate) and subprocess.run(
                [candidate, "-c", "import " + module], capture_output=True).returncode == 0:
            return candidate
    return None


# The converter and PyTorch-baseline tests need PyTorch (python3-torch); the
# training curves (tools/plot_training.py) python3-matplotlib, which
# scripts/setup.sh installs.
torch_python = python_with("torch")
if torch_python:
    config.available_features.add("torch")
config.substitutions.append(("%torch_python", torch_python or sys.executable))
plot_python = python_with("matplotlib")
if plot_python:
    config.available_features.add("matplotlib")
config.substitutions.append(("%plot_python", plot_python or sys.executable))
config.substitutions.append(("%python", sys.executable))
# Hugging Face's JavaScript tokenizer, an encoder independent of tlm's, when
# node and the package are here (.ci/run installs it into .cache/npm).
node_modules = os.environ.get("TLM_NODE_MODULES") or os.path.join(
    config.tlm_src_root, ".cache", "npm", "node_modules")
if shutil.which("node") and os.path.isdir(
        os.path.join(node_modules, "@huggingface", "tokenizers")):
    config.available_features.add("hf-tokenizers-js")
config.substitutions.append(("%node_modules", node_modules))
# A file system that fills up: a small tmpfs mounted in a private user and
# mount namespace, where the kernel and the container allow them.
if shutil.which("unshare") and subprocess.run(
        ["unshare", "-rm", "sh", "-c",
         "mount -t tmpfs -o size=64k none /tmp"],
        capture_output=True).returncode == 0:
    config.available_features.add("tmpfs-namespace")
# Sanitizer builds trade memory and time for checks: memory budgets and
# timing-sensitive tests do not apply there.
if config.tlm_sanitize:
    config.available_features.add("sanitizers")
# Data-parallel training (tlm-run train under mpirun), where tlm-run was
# built with MPI and Open MPI's launcher is here. As root mpirun wants
# --allow-run-as-root; two ranks on fewer cores --oversubscribe; in
# containers shared memory's single-copy mechanism fails (docs/training.md).
mpirun = shutil.which("mpirun")
if config.tlm_have_mpi.upper() in ("1", "ON", "TRUE", "YES") and mpirun:
    config.available_features.add("mpi")
# In sanitizer builds LeakSanitizer would report Open MPI's own allocations
# at exit (thousands, most from its plugins, unloaded by then and so beyond
# any suppression by name): the ranks run without leak detection, ASan and
# UBSan checks on. The same code runs leak-checked in one process.
mpi_env = ""
if config.tlm_sanitize:
    mpi_env = "env ASAN_OPTIONS=%s " % ":".join(
        filter(None, [os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))
config.substitutions.append(
    ("%mpirun", mpi_env + (mpirun or "mpirun") +
     " --oversubscribe --allow-run-as-root"
     " --mca btl_vader_single_copy_mechanism none"))
# The test data lives in the repository (data/); TLM_DATA_DIR points
# elsewhere.
data = os.environ.get("TLM_DATA_DIR") or os.path.join(config.tlm_src_root, "data")
config.substitutions.append(("%data", data))

# GPU tests need a driver that answers with a device, not just a library.
def cuda_device_answers():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return (cuda.cuInit(0) == 0 and
                cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and
                count.value > 0)
    except OSError:
        return False
if cuda_device_answers():
    config.available_features.add("cuda")
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
config.substitutions.append(("%ptxas", ptxas))
# The GPU pipeline links CUDA's libdevice (the toolkit folder is found the way
# tlm::findCudaToolkit does).
toolkit = next((os.environ[v] for v in ["CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"]
                if os.environ.get(v)), "/usr/local/cuda")
if os.path.exists(os.path.join(toolkit, "nvvm", "libdevice", "libdevice.10.bc")):
    config.available_features.add("libdevice")
