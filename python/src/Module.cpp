//===- Module.cpp - attnc._attnc: the runtime's C++ API for Python --------===//
//
// The native half of the Python module (docs/spec.md §6b);
// python/attnc/__init__.py is the rest (reading a spec from a path or a string,
// torch operators, from_torch, heatmaps). A Kernel here is the runtime's
// Kernel: its checks and messages are the runtime's; a BufferError (the
// caller's names, shapes, dtypes) becomes ValueError, every other error
// attnc.Error. The GIL is released while a spec compiles and while a kernel
// runs, so Python threads can run kernels at once (kernels are thread-safe).
//
//===----------------------------------------------------------------------===//

#include "Arrays.h"

#include "attnc/Halide/HalideBackend.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/ADT/SmallVector.h"

#include <nanobind/stl/string.h>

#include <unistd.h>

namespace nb = nanobind;
using namespace attnc;
using namespace attnc::python;

namespace {

/// Raised as attnc.Error (a RuntimeError).
struct AttncError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Raised by a call that autograd must see (grad mode on and a tensor that
/// requires grad): the Python half (attnc/_torch.py) runs it through the
/// kernel's torch operator, whose backward says that the kernel computes
/// no gradient. Never reaches users.
struct NeedsAutograd : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Raises `error` (which must be an error) as ValueError or attnc.Error.
[[noreturn]] void raise(llvm::Error error) {
  std::string message;
  bool isBufferError = false;
  llvm::handleAllErrors(
      std::move(error),
      [&](const BufferError &e) {
        message = e.message();
        isBufferError = true;
      },
      [&](const llvm::ErrorInfoBase &e) { message = e.message(); });
  if (isBufferError)
    throw nb::value_error(message.c_str());
  throw AttncError(message);
}

void check(llvm::Error error) {
  if (error)
    raise(std::move(error));
}

bool interpreterIsFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/// Takes the GIL back after withoutGil's work. A thread whose work ends
/// while the interpreter shuts down (a daemon thread inside a call at exit)
/// does not: CPython would end it with pthread_exit, whose forced
/// unwinding through nanobind's `catch (...)` aborts the process ("FATAL:
/// exception not rethrown"). It waits for the process to exit instead, as
/// CPython 3.14 makes such threads do.
void restoreThread(PyThreadState *state) {
  if (interpreterIsFinalizing())
    for (;;)
      pause();
  PyEval_RestoreThread(state);
}

/// Runs `work` (a compile, a kernel, a bind) with the GIL released, so that
/// other Python threads run meanwhile.
template <typename Work> auto withoutGil(Work work) {
  PyThreadState *state = PyEval_SaveThread();
  try {
    auto result = work();
    restoreThread(state);
    return result;
  } catch (...) {
    restoreThread(state);
    throw;
  }
}

/// The Python-visible kernel: the runtime's, shared with its cache.
struct PyKernel {
  std::shared_ptr<Kernel> kernel;

  const KernelSignature &signature() const { return kernel->signature(); }

  /// The argument `name` names (ValueError with the runtime's message).
  const KernelArgument &argument(llvm::StringRef name) const {
    llvm::Expected<unsigned> index = kernel->argumentIndex(name);
    if (!index)
      throw nb::value_error(llvm::toString(index.takeError()).c_str());
    return signature().arguments[*index];
  }

  /// Reads every array in `arrays` (keyword arguments), in their order.
  /// (Small vectors: a call allocates as little as it can.)
  llvm::SmallVector<ArgumentArray, 8> readArrays(const nb::kwargs &arrays,
                                                 bool cast) const {
    llvm::SmallVector<ArgumentArray, 8> read;
    for (auto [key, value] : arrays) {
      Py_ssize_t size = 0;
      const char *text = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
      if (!text)
        throw nb::python_error();
      llvm::StringRef name(text, size_t(size));
      const KernelArgument &a = argument(name);
      if (a.role == ArgumentRole::Output)
        throw nb::value_error(("'" + name.str() +
                               "' is an output: the call returns it; pass "
                               "inputs, params and states")
                                  .c_str());
      if (a.role != ArgumentRole::State) {
        read.push_back(readArray(a, value, cast));
        continue;
      }
      // The kernel updates a state in place: never a copy, never cast.
      std::string what = "state '" + a.name + "'";
      ArgumentArray state = readArray(a, value, /*cast=*/false, what);
      requireWritable(state, what);
      read.push_back(std::move(state));
    }
    return read;
  }

  /// Removes `cast=` from keyword arguments and returns it.
  static bool takeCast(nb::kwargs &arrays) {
    static PyObject *key = PyUnicode_InternFromString("cast");
    PyObject *value = PyDict_GetItemWithError(arrays.ptr(), key);
    if (!value) {
      if (PyErr_Occurred())
        throw nb::python_error();
      return false;
    }
    // True or False only: nb::cast<bool> of anything else ("no", 1) raised
    // a bare RuntimeError('std::bad_cast').
    if (!PyBool_Check(value))
      throw nb::type_error(
          ("cast= takes True or False, got " +
           std::string(nb::type_name(nb::handle(value).type()).c_str()))
              .c_str());
    bool cast = value == Py_True;
    PyDict_DelItem(arrays.ptr(), key);
    return cast;
  }

  /// The runtime's view of `array` (which gives up its shape).
  static HostBuffer hostBuffer(ArgumentArray &array) {
    return HostBuffer{array.argument->name, array.data, array.argument->type,
                      std::move(array.shape)};
  }

  /// Refuses a read-only `array` (`what`: `state 'K'`, ...), which the
  /// kernel would write (readArray's `inPlace` refuses copies).
  static void requireWritable(const ArgumentArray &array,
                              const std::string &what) {
    if (array.readOnly)
      throw nb::value_error(
          (what + " is a read-only array; the kernel writes it").c_str());
  }

  /// Removes `out=` from keyword arguments: the arrays the outputs are
  /// written into, one per output in `output` order (a tuple or list, or
  /// one array for one output), or none.
  llvm::SmallVector<ArgumentArray, 2> takeOut(nb::kwargs &arrays) const {
    static PyObject *key = PyUnicode_InternFromString("out");
    PyObject *value = PyDict_GetItemWithError(arrays.ptr(), key);
    llvm::SmallVector<ArgumentArray, 2> out;
    if (!value) {
      if (PyErr_Occurred())
        throw nb::python_error();
      return out;
    }
    nb::object given = nb::borrow(value);
    PyDict_DelItem(arrays.ptr(), key);
    llvm::SmallVector<const KernelArgument *, 2> outputs;
    for (const KernelArgument &a : signature().arguments)
      if (a.role == ArgumentRole::Output)
        outputs.push_back(&a);
    llvm::SmallVector<nb::handle, 2> items;
    if (nb::isinstance<nb::tuple>(given) || nb::isinstance<nb::list>(given))
      for (nb::handle item : given)
        items.push_back(item);
    else
      items.push_back(given);
    if (items.size() != outputs.size())
      throw nb::value_error(("out=: kernel '" + signature().name + "' has " +
                             std::to_string(outputs.size()) +
                             " output(s), got " + std::to_string(items.size()) +
                             " array(s)")
                                .c_str());
    for (size_t i = 0; i < items.size(); ++i) {
      std::string what = "out=: output '" + outputs[i]->name + "'";
      ArgumentArray array = readArray(*outputs[i], items[i], false, what);
      requireWritable(array, what);
      out.push_back(std::move(array));
    }
    return out;
  }

  nb::object call(nb::kwargs arrays) {
    bool cast = takeCast(arrays);
    llvm::SmallVector<ArgumentArray, 2> out = takeOut(arrays);
    llvm::SmallVector<ArgumentArray, 8> read = readArrays(arrays, cast);
    bool torch =
        llvm::any_of(read, [](const ArgumentArray &a) { return a.isTorch; });
    auto requiresGrad = [](const ArgumentArray &a) { return a.requiresGrad; };
    if ((llvm::any_of(read, requiresGrad) || llvm::any_of(out, requiresGrad)) &&
        torchGradEnabled())
      throw NeedsAutograd(signature().name);
    llvm::SmallVector<HostBuffer, 8> buffers;
    for (ArgumentArray &array : read)
      buffers.push_back(hostBuffer(array));
    llvm::SmallVector<AlignedBuffer, 2> outputs;
    llvm::SmallVector<const KernelArgument *, 2> outputArguments;
    for (ArgumentArray &array : out)
      buffers.push_back(hostBuffer(array));
    for (const KernelArgument &a : signature().arguments) {
      if (a.role != ArgumentRole::Output || !out.empty())
        continue;
      outputs.push_back(
          allocateAligned(size_t(a.numElements()) * elementSize(a.type)));
      outputArguments.push_back(&a);
      buffers.push_back(
          HostBuffer{a.name, outputs.back().get(), a.type, a.shape});
    }
    check(withoutGil([&] { return kernel->run(buffers); }));
    size_t count = out.empty() ? outputs.size() : out.size();
    auto result = [&](size_t i) {
      return out.empty()
                 ? wrapOutput(*outputArguments[i], std::move(outputs[i]), torch)
                 : out[i].source;
    };
    if (count == 1)
      return result(0);
    nb::list results;
    for (size_t i = 0; i < count; ++i)
      results.append(result(i));
    return nb::tuple(results);
  }

  void bind(nb::kwargs params) {
    bool cast = takeCast(params);
    llvm::SmallVector<ArgumentArray, 8> read = readArrays(params, cast);
    llvm::SmallVector<HostBuffer, 8> buffers;
    for (ArgumentArray &array : read)
      buffers.push_back(hostBuffer(array));
    // One bind for the whole set: a call on another thread sees the old
    // params or these, never some of each.
    check(withoutGil([&] { return kernel->bindParams(buffers); }));
  }

  void prepare() {
    check(withoutGil([&] { return kernel->prepareParams(); }));
  }

  /// How a call would pass each array: (name, "view" or "copy", address).
  nb::list plan(nb::kwargs arrays) {
    bool cast = takeCast(arrays);
    nb::list result;
    for (const ArgumentArray &array : readArrays(arrays, cast))
      result.append(nb::make_tuple(array.argument->name,
                                   array.copied ? "copy" : "view",
                                   reinterpret_cast<uintptr_t>(array.data)));
    return result;
  }

  nb::list signatureList() const {
    nb::list result;
    for (const KernelArgument &a : signature().arguments) {
      nb::list shape;
      for (int64_t extent : a.shape)
        shape.append(extent);
      result.append(nb::make_tuple(a.name, roleName(a.role).str(),
                                   elementTypeName(a.type).str(),
                                   nb::tuple(shape)));
    }
    return result;
  }

  nb::dict dims() const {
    nb::dict result;
    for (const auto &[name, value] : signature().dims)
      result[name.c_str()] = value;
    return result;
  }
};

CompileOptions compileOptions(const std::string &target,
                              const std::string &mcpu, int optLevel,
                              const std::string &backend,
                              const std::string &halideSchedule) {
  CompileOptions options = Runtime::defaultOptions();
  if (backend == "halide")
    options.backend = Backend::Halide;
  else if (backend != "mlir")
    throw nb::value_error(
        ("attnc.compile: unknown backend '" + backend + "' (mlir or halide)")
            .c_str());
  options.halideSchedule = halideSchedule;
  if (target == "nvptx")
    options.target.kind = TargetKind::Nvptx;
  else if (target != "cpu")
    throw nb::value_error(
        ("attnc.compile: unknown target '" + target + "' (cpu or nvptx)")
            .c_str());
  if (optLevel < 0 || optLevel > 3)
    throw nb::value_error(("attnc.compile: opt_level must be 0, 1, 2 or 3, "
                           "got " +
                           std::to_string(optLevel))
                              .c_str());
  options.target.cpu = mcpu;
  options.setOptLevel(unsigned(optLevel));
  if (options.backend == Backend::Halide)
    if (llvm::Error bad = checkHalideOptions(options))
      throw nb::value_error(
          ("attnc.compile: " + llvm::toString(std::move(bad))).c_str());
  if (options.backend != Backend::Halide && halideSchedule != "attnc")
    throw nb::value_error(
        "attnc.compile: halide_schedule needs backend=\"halide\"");
  return options;
}

PyKernel compiled(llvm::Expected<std::shared_ptr<Kernel>> kernel) {
  if (!kernel)
    raise(kernel.takeError());
  return PyKernel{std::move(*kernel)};
}

} // namespace

NB_MODULE(_attnc, m) {
  m.doc() = "attnc's runtime: compile .attn specs, bind params, run kernels";
  // Kernels held by torch's operator registry (Kernel.op) live until the
  // interpreter exits, after nanobind's leak check.
  nb::set_leak_warnings(false);

  nb::exception<AttncError>(m, "Error", PyExc_RuntimeError);
  nb::exception<NeedsAutograd>(m, "_NeedsAutograd", PyExc_RuntimeError);

  // Attributes of its own (the Python half keeps the kernel's torch
  // operator and argument names there) and weak references (its registry
  // of kernels by key, which torch.compile's graphs name).
  nb::class_<PyKernel>(m, "Kernel", nb::dynamic_attr(),
                       nb::is_weak_referenceable())
      .def_prop_ro("name", [](const PyKernel &k) { return k.signature().name; })
      .def_prop_ro("signature", &PyKernel::signatureList,
                   "[(name, role, dtype, shape), ...] in ABI order: inputs "
                   "and params as declared, then outputs")
      .def_prop_ro("dims", &PyKernel::dims, "the block's named dims")
      .def(
          "bind",
          [](nb::handle self, nb::kwargs params) {
            nb::cast<PyKernel &>(self).bind(std::move(params));
            return nb::borrow(self);
          },
          "copies params into the kernel (keyword arrays); returns the "
          "kernel")
      .def(
          "is_bound",
          [](const PyKernel &k, const std::string &name) {
            llvm::Expected<unsigned> index = k.kernel->argumentIndex(name);
            if (!index)
              throw nb::value_error(llvm::toString(index.takeError()).c_str());
            return k.kernel->isBound(*index);
          },
          "whether param `name` has values bound")
      .def("prepare", &PyKernel::prepare,
           "lays the bound params out for the kernel now (else the first "
           "call does)")
      .def("plan", &PyKernel::plan,
           "how a call would pass each array: [(name, 'view' or 'copy', "
           "address)]")
      .def("__call__", &PyKernel::call);

  m.def(
      "compile_text",
      [](const std::string &text, const std::string &sourceName,
         const std::string &block, const std::string &target,
         const std::string &mcpu, int optLevel, const std::string &backend,
         const std::string &halideSchedule) {
        CompileOptions options =
            compileOptions(target, mcpu, optLevel, backend, halideSchedule);
        return compiled(withoutGil([&] {
          return Runtime::global().compile(text, sourceName, block, options);
        }));
      },
      nb::arg("text"), nb::arg("source_name"), nb::arg("block"),
      nb::arg("target"), nb::arg("mcpu"), nb::arg("opt_level"),
      nb::arg("backend"), nb::arg("halide_schedule"));
  m.def(
      "compile_file",
      [](const std::string &path, const std::string &block,
         const std::string &target, const std::string &mcpu, int optLevel,
         const std::string &backend, const std::string &halideSchedule) {
        CompileOptions options =
            compileOptions(target, mcpu, optLevel, backend, halideSchedule);
        return compiled(withoutGil([&] {
          return Runtime::global().compileFile(path, block, options);
        }));
      },
      nb::arg("path"), nb::arg("block"), nb::arg("target"), nb::arg("mcpu"),
      nb::arg("opt_level"), nb::arg("backend"), nb::arg("halide_schedule"));
  m.def(
      "backends",
      [] {
        nb::list names;
        names.append("mlir");
        if (haveHalideBackend())
          names.append("halide");
        return nb::tuple(names);
      },
      "the code generators in this build: mlir, and halide when it was "
      "built with Halide");
  m.def(
      "set_num_threads",
      [](unsigned threads) { Runtime::global().setNumThreads(threads); },
      "threads a kernel may use (the runtime's pool; 1: the calling thread)");
  m.def("get_num_threads", [] { return Runtime::global().numThreads(); });
  m.def(
      "clear_memory_cache", [] { Runtime::global().clearMemoryCache(); },
      "forgets the kernels compiled so far (the disk cache stays)");
  m.def("cache_statistics", [] {
    RuntimeStatistics s = Runtime::global().statistics();
    nb::dict result;
    result["compilations"] = s.compilations;
    result["memory_hits"] = s.memoryHits;
    result["disk_hits"] = s.diskHits;
    result["corrupt_entries"] = s.corruptEntries;
    return result;
  });
  m.def("compiler_version", [] { return compilerVersion().str(); });
}
