//===- Arrays.cpp - NumPy arrays and torch tensors as kernel buffers ------===//

#include "Arrays.h"

#include "attn/Target/FloatConversions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace nb = nanobind;
using namespace attnc;
using namespace attnc::python;

void AlignedFree::operator()(void *p) const { std::free(p); }

AlignedBuffer attnc::python::allocateAligned(size_t bytes) {
  constexpr size_t kAlignment = 64;
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
  if (!p)
    throw std::bad_alloc();
  return AlignedBuffer(p);
}

namespace {

using Code = nb::dlpack::dtype_code;

/// NumPy's name of a DLPack dtype: float32, int64, uint8, bool, ...
std::string dtypeName(nb::dlpack::dtype type) {
  std::string bits = std::to_string(type.bits);
  switch (static_cast<Code>(type.code)) {
  case Code::Float:
    return "float" + bits;
  case Code::Int:
    return "int" + bits;
  case Code::UInt:
    return "uint" + bits;
  case Code::Bool:
    return "bool";
  case Code::Bfloat:
    return "bfloat" + bits;
  case Code::Complex:
    return "complex" + bits;
  default:
    break;
  }
  return "dtype(code " + std::to_string(type.code) + ", " + bits + " bits)";
}

bool isType(nb::dlpack::dtype type, Code code, unsigned bits) {
  return type.code == static_cast<uint8_t>(code) && type.bits == bits &&
         type.lanes == 1;
}

std::string describe(const KernelArgument &argument) {
  return (roleName(argument.role) + " '" + argument.name + "'").str();
}

std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// Whether the elements are laid out densely in row-major order (strides
/// of size-1 axes do not matter).
bool isCContiguous(const nb::ndarray<> &view) {
  int64_t expected = 1;
  for (size_t d = view.ndim(); d-- > 0;) {
    if (view.shape(d) != 1 && view.stride(d) != expected)
      return false;
    expected *= static_cast<int64_t>(view.shape(d));
  }
  return true;
}

/// Element `offset` (in elements) of `data`, of a signed or unsigned
/// integer type of `bits`, as an int64 (uint64 above INT64_MAX saturates:
/// it cannot fit in int32 either).
int64_t readInteger(const char *data, int64_t offset, nb::dlpack::dtype type) {
  const char *p = data + offset * (type.bits / 8);
  bool isSigned = type.code == static_cast<uint8_t>(Code::Int);
  switch (type.bits) {
  case 8:
    return isSigned ? int64_t(*reinterpret_cast<const int8_t *>(p))
                    : int64_t(*reinterpret_cast<const uint8_t *>(p));
  case 16:
    return isSigned ? int64_t(*reinterpret_cast<const int16_t *>(p))
                    : int64_t(*reinterpret_cast<const uint16_t *>(p));
  case 32:
    return isSigned ? int64_t(*reinterpret_cast<const int32_t *>(p))
                    : int64_t(*reinterpret_cast<const uint32_t *>(p));
  default: {
    if (isSigned)
      return *reinterpret_cast<const int64_t *>(p);
    uint64_t value = *reinterpret_cast<const uint64_t *>(p);
    return value > uint64_t(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : int64_t(value);
  }
  }
}

/// Calls `visit(flat, offset)` for every element in row-major order, with
/// `offset` the element's position in `view` (strides in elements).
template <typename Visit>
void forEachElement(const nb::ndarray<> &view, Visit visit) {
  size_t rank = view.ndim();
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d)
    count *= static_cast<int64_t>(view.shape(d));
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    visit(flat, offset);
    for (size_t d = rank; d-- > 0;) {
      offset += view.stride(d);
      if (++index[d] < static_cast<int64_t>(view.shape(d)))
        break;
      offset -= view.stride(d) * index[d];
      index[d] = 0;
    }
  }
}

std::string indexText(int64_t flat, llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shapeText(index);
}

/// The DLPack dtype of `type` (its code in the element-type table).
nb::dlpack::dtype dlpackTypeOf(ElementType type) {
  const mlir::attn::ElementTypeInfo &info = mlir::attn::describe(type);
  nb::dlpack::dtype dtype;
  dtype.code = info.dlpackCode;
  dtype.bits = static_cast<uint8_t>(info.bytes * 8);
  dtype.lanes = 1;
  return dtype;
}

/// Throws ValueError when an array of dtype `type` cannot be read as
/// `argument`'s dtype exactly (or, for float64, without `cast`); integer
/// values are range-checked as they are copied.
/// Whether `type` is the bf16/f16 argument's own dtype (torch's bfloat16
/// or float16, NumPy's float16): its bit patterns are copied as they are.
bool isOwnHalf(const KernelArgument &argument, nb::dlpack::dtype type) {
  nb::dlpack::dtype own = dlpackTypeOf(argument.type);
  return type.code == own.code && type.bits == own.bits && type.lanes == 1;
}

void checkConvertible(const KernelArgument &argument, nb::dlpack::dtype type,
                      bool cast, llvm::ArrayRef<int64_t> shape) {
  if (argument.type == ElementType::BF16 || argument.type == ElementType::F16) {
    // Its own dtype is copied as it is (a strided array); a bf16 argument
    // takes uint16 bit patterns as they are; f32/f64 values are rounded
    // with cast=True.
    if (isOwnHalf(argument, type) ||
        (argument.type == ElementType::BF16 && isType(type, Code::UInt, 16)) ||
        ((isType(type, Code::Float, 32) || isType(type, Code::Float, 64)) &&
         cast))
      return;
    std::string hint =
        isType(type, Code::Float, 32) || isType(type, Code::Float, 64)
            ? " (pass cast=True to round " + dtypeName(type) + " to " +
                  mlir::attn::nameOf(argument.type).str() + ")"
            : "";
    throw nb::value_error((describe(argument) + ": expected " +
                           argument.typeString() + ", got " + dtypeName(type) +
                           shapeText(shape) + hint)
                              .c_str());
  }
  if (argument.type == ElementType::F32) {
    if (isType(type, Code::Float, 32) ||
        (isType(type, Code::Float, 64) && cast))
      return;
    std::string hint = isType(type, Code::Float, 64)
                           ? " (pass cast=True to convert float64 to f32)"
                           : "";
    throw nb::value_error((describe(argument) + ": expected " +
                           argument.typeString() + ", got " + dtypeName(type) +
                           shapeText(shape) + hint)
                              .c_str());
  }
  bool integer =
      (type.code == static_cast<uint8_t>(Code::Int) ||
       type.code == static_cast<uint8_t>(Code::UInt)) &&
      type.lanes == 1 &&
      (type.bits == 8 || type.bits == 16 || type.bits == 32 || type.bits == 64);
  if (!integer)
    throw nb::value_error((describe(argument) + ": expected " +
                           argument.typeString() + ", got " + dtypeName(type) +
                           shapeText(shape) + " (integers are converted)")
                              .c_str());
}

/// attnc's name of `type` with `shape`: f32[2, 3].
std::string shapedTypeString(ElementType type, llvm::ArrayRef<int64_t> shape) {
  KernelArgument a;
  a.type = type;
  a.shape.assign(shape.begin(), shape.end());
  return a.typeString();
}

/// Copies `view` into `out` (row-major) as `argument`'s dtype, which
/// checkConvertible accepted; throws ValueError for an integer that does
/// not fit.
void convert(const KernelArgument &argument, const nb::ndarray<> &view,
             llvm::ArrayRef<int64_t> shape, void *out) {
  nb::dlpack::dtype type = view.dtype();
  const char *data = static_cast<const char *>(view.data());
  if (argument.type == ElementType::BF16 || argument.type == ElementType::F16) {
    auto *dst = static_cast<uint16_t *>(out);
    forEachElement(view, [&](int64_t flat, int64_t offset) {
      if (isType(type, Code::UInt, 16) || isOwnHalf(argument, type)) {
        dst[flat] = reinterpret_cast<const uint16_t *>(data)[offset];
        return;
      }
      float value = isType(type, Code::Float, 32)
                        ? reinterpret_cast<const float *>(data)[offset]
                        : float(reinterpret_cast<const double *>(data)[offset]);
      dst[flat] = mlir::attn::narrowTo(argument.type, value);
    });
    return;
  }
  if (argument.type == ElementType::F32) {
    auto *dst = static_cast<float *>(out);
    if (isType(type, Code::Float, 32)) {
      forEachElement(view, [&](int64_t flat, int64_t offset) {
        dst[flat] = reinterpret_cast<const float *>(data)[offset];
      });
      return;
    }
    forEachElement(view, [&](int64_t flat, int64_t offset) {
      dst[flat] = float(reinterpret_cast<const double *>(data)[offset]);
    });
    return;
  }
  auto *dst = static_cast<int32_t *>(out);
  forEachElement(view, [&](int64_t flat, int64_t offset) {
    int64_t value = readInteger(data, offset, type);
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max())
      throw nb::value_error((describe(argument) + ": value " +
                             std::to_string(value) + " at " +
                             indexText(flat, shape) + " does not fit in i32")
                                .c_str());
    dst[flat] = int32_t(value);
  });
}

/// Whether `value` is a NumPy array of ml_dtypes' bfloat16.
bool isMlDtypesBfloat16(nb::handle value) {
  if (!nb::hasattr(value, "dtype"))
    return false;
  nb::object dtype = value.attr("dtype");
  return nb::hasattr(dtype, "name") &&
         nb::str(dtype.attr("name")).equal(nb::str("bfloat16")) &&
         !nb::hasattr(value, "is_cpu"); // not a torch tensor
}

/// torch.Tensor and torch.from_numpy, looked up without importing torch:
/// a program that has made a tensor has imported it. Kept for the
/// process's life once found.
struct TorchHandles {
  PyObject *tensorType = nullptr;
  PyObject *fromNumpy = nullptr;
  PyObject *float32 = nullptr;
  PyObject *int32 = nullptr;
  PyObject *isGradEnabled = nullptr;
};

const TorchHandles *torchHandles() {
  static TorchHandles handles;
  if (handles.tensorType)
    return &handles;
  PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
  if (!torch)
    return nullptr;
  PyObject *tensorType = PyObject_GetAttrString(torch, "Tensor");
  PyObject *fromNumpy = PyObject_GetAttrString(torch, "from_numpy");
  PyObject *float32 = PyObject_GetAttrString(torch, "float32");
  PyObject *int32 = PyObject_GetAttrString(torch, "int32");
  PyObject *isGradEnabled = PyObject_GetAttrString(torch, "is_grad_enabled");
  if (!tensorType || !fromNumpy || !float32 || !int32 || !isGradEnabled) {
    PyErr_Clear();
    for (PyObject *o : {tensorType, fromNumpy, float32, int32, isGradEnabled})
      Py_XDECREF(o);
    return nullptr;
  }
  handles.isGradEnabled = isGradEnabled;
  handles.fromNumpy = fromNumpy;
  handles.float32 = float32;
  handles.int32 = int32;
  handles.tensorType = tensorType;
  return &handles;
}

/// Whether `value` is a torch.Tensor (a Parameter, a FakeTensor...).
bool isTorchTensor(nb::handle value) {
  const TorchHandles *torch = torchHandles();
  if (!torch)
    return false;
  int result = PyObject_IsInstance(value.ptr(), torch->tensorType);
  if (result < 0)
    PyErr_Clear();
  return result == 1;
}

/// The attribute names the common case reads, interned once: this runs on
/// every call.
struct TorchNames {
  PyObject *isCpu = PyUnicode_InternFromString("is_cpu");
  PyObject *dtype = PyUnicode_InternFromString("dtype");
  PyObject *isContiguous = PyUnicode_InternFromString("is_contiguous");
  PyObject *shape = PyUnicode_InternFromString("shape");
  PyObject *dataPtr = PyUnicode_InternFromString("data_ptr");
  PyObject *untypedStorage = PyUnicode_InternFromString("untyped_storage");
  PyObject *nbytes = PyUnicode_InternFromString("nbytes");
  PyObject *isNeg = PyUnicode_InternFromString("is_neg");
  PyObject *requiresGrad = PyUnicode_InternFromString("requires_grad");
};

const TorchNames &torchNames() {
  static const TorchNames names; // Kept for the process's life.
  return names;
}

/// `tensor.name` or `tensor.name()` (`call`); null with no Python error set
/// when it fails.
nb::object torchAttribute(nb::handle tensor, PyObject *name, bool call) {
  PyObject *result = call ? PyObject_CallMethodNoArgs(tensor.ptr(), name)
                          : PyObject_GetAttr(tensor.ptr(), name);
  if (!result)
    PyErr_Clear();
  return nb::steal(result);
}

/// Whether `bytes` bytes at `data` lie inside the torch storage `array`
/// holds (true when it holds none: a NumPy array, or a tensor whose
/// storage torch does not expose, which DLPack then checks). A tensor that
/// another thread changes while the call reads it (`X.set_()` releases the
/// GIL while it swaps the storage and then the sizes) can be read torn: a
/// shape of the old storage with a pointer of the new one, or null. Every
/// pointer the kernel gets is checked against the storage held for the
/// call, so a torn read is refused, never followed.
bool inHeldStorage(const ArgumentArray &array, uintptr_t data,
                   uintptr_t bytes) {
  if (!array.torchStorage.is_valid())
    return true;
  uintptr_t storageBegin = array.storageBegin;
  uintptr_t storageBytes = array.storageBytes;
  return data && data >= storageBegin && data - storageBegin <= storageBytes &&
         bytes <= storageBytes - (data - storageBegin);
}

/// The bytes of `count` elements of `type`, or nullopt on overflow.
std::optional<uintptr_t> byteCount(llvm::ArrayRef<int64_t> shape,
                                   ElementType type) {
  uintptr_t bytes = elementSize(type);
  for (int64_t extent : shape)
    if (extent < 0 || __builtin_mul_overflow(bytes, uintptr_t(extent), &bytes))
      return std::nullopt;
  return bytes;
}

/// The error of a tensor read torn (see inHeldStorage).
[[noreturn]] void throwTornRead(const KernelArgument &argument) {
  throw nb::value_error(
      (describe(argument) +
       ": the tensor changed while the call read it (another thread "
       "replaced or resized its storage: X.set_(), resize_()); nothing ran")
          .c_str());
}

/// The common case of a torch tensor, read off its attributes (cheaper than
/// a DLPack capsule): a contiguous CPU tensor of `argument`'s dtype. False
/// for any other tensor.
bool readTorchInPlace(const KernelArgument &argument, nb::handle tensor,
                      ArgumentArray &array) {
  const TorchHandles *torch = torchHandles();
  const TorchNames &names = torchNames();
  if (!array.torchStorage.is_valid())
    return false;
  nb::object isCpu = torchAttribute(tensor, names.isCpu, false);
  nb::object dtype = torchAttribute(tensor, names.dtype, false);
  if (!isCpu.is_valid() || !dtype.is_valid() || !isCpu.is(nb::handle(Py_True)))
    return false;
  PyObject *want =
      argument.type == ElementType::F32 ? torch->float32 : torch->int32;
  if (dtype.ptr() != want)
    return false;
  nb::object contiguous = torchAttribute(tensor, names.isContiguous, true);
  nb::object shape = torchAttribute(tensor, names.shape, false);
  nb::object pointer = torchAttribute(tensor, names.dataPtr, true);
  if (!contiguous.is(nb::handle(Py_True)) || !shape.is_valid() ||
      !pointer.is_valid())
    return false;
  for (nb::handle extent : shape)
    array.shape.push_back(nb::cast<int64_t>(extent));
  // The elements must lie in the storage held for the call.
  auto begin = nb::cast<uintptr_t>(pointer);
  std::optional<uintptr_t> bytes = byteCount(array.shape, argument.type);
  if (!bytes || !inHeldStorage(array, begin, *bytes)) {
    array.shape.clear();
    return false;
  }
  array.data = reinterpret_cast<void *>(begin);
  return true;
}

/// Holds `tensor`'s storage in `array` for the call and refuses a tensor
/// without data: a FakeTensor (torch.compile's tracing) or a meta tensor
/// has a storage at address 0, and its data_ptr() is not memory. A tensor
/// without a storage of its own (a sparse one) is left to DLPack, which
/// refuses it.
void holdTorchStorage(const KernelArgument &argument, nb::handle tensor,
                      ArgumentArray &array) {
  const TorchNames &names = torchNames();
  nb::object storage = torchAttribute(tensor, names.untypedStorage, true);
  if (!storage.is_valid())
    return;
  nb::object pointer = torchAttribute(storage, names.dataPtr, true);
  nb::object bytes = torchAttribute(storage, names.nbytes, true);
  if (!pointer.is_valid() || !bytes.is_valid())
    return;
  if (nb::cast<uintptr_t>(pointer) == 0 && nb::cast<uintptr_t>(bytes) != 0)
    throw nb::value_error(
        (describe(argument) + ": the " + nb::type_name(tensor.type()).c_str() +
         " has no data (a FakeTensor or a meta tensor, as torch.compile "
         "traces with); attnc kernels read real CPU tensors")
            .c_str());
  array.torchStorage = std::move(storage);
  array.storageBegin = nb::cast<uintptr_t>(pointer);
  array.storageBytes = nb::cast<uintptr_t>(bytes);
}

/// `tensor` as the values it stands for: with torch's negative view bit
/// (torch._neg_view, the real part of a conjugate view) its memory holds
/// the negated values, so it is resolved into a tensor of its own (a copy,
/// hence never an out= array).
nb::object resolveTorchViews(nb::handle tensor, ArgumentArray &array) {
  nb::object isNeg = torchAttribute(tensor, torchNames().isNeg, true);
  if (!isNeg.is(nb::handle(Py_True)))
    return nb::borrow(tensor);
  array.copied = true;
  return tensor.attr("resolve_neg")();
}

/// Any other torch tensor, through DLPack, of the tensor or, when it
/// requires grad, of .detach() (the kernel only reads).
bool readTorch(nb::handle value, ArgumentArray &array) {
  if (nb::try_cast(value, array.view, /*convert=*/false))
    return true;
  array.source = value.attr("detach")();
  return nb::try_cast(array.source, array.view, /*convert=*/false);
}

} // namespace

ArgumentArray attnc::python::readArray(const KernelArgument &argument,
                                       nb::handle value, bool cast,
                                       const std::string &inPlace) {
  ArgumentArray array;
  array.argument = &argument;
  array.source = nb::borrow(value);
  array.isTorch = isTorchTensor(value);
  if (array.isTorch) {
    array.requiresGrad = torchAttribute(value, torchNames().requiresGrad, false)
                             .is(nb::handle(Py_True));
    array.source = resolveTorchViews(value, array);
    value = array.source;
    holdTorchStorage(argument, value, array);
    if (!array.copied && readTorchInPlace(argument, value, array))
      return array;
  }
  // NumPy has no bfloat16 of its own: ml_dtypes' arrays refuse the buffer
  // protocol, so a bf16 argument reads them through a uint16 view (no
  // copy), as bit patterns.
  if (!array.isTorch && argument.type == ElementType::BF16 &&
      isMlDtypesBfloat16(value)) {
    array.bitsView = value.attr("view")("uint16");
    value = array.bitsView;
  }
  bool read = array.isTorch
                  ? readTorch(value, array)
                  : nb::try_cast(value, array.view, /*convert=*/false);
  // nanobind's writable view refuses a read-only array; the kernel only
  // reads inputs and params, so take it as it is.
  nb::ndarray<nb::ro> readOnly;
  if (!read && !array.isTorch &&
      nb::try_cast(value, readOnly, /*convert=*/false)) {
    array.view = nb::ndarray<>(readOnly);
    array.readOnly = read = true;
  }
  if (!read)
    throw nb::value_error((describe(argument) +
                           ": expected a NumPy array or a torch tensor (" +
                           argument.typeString() + "), got " +
                           nb::type_name(value.type()).c_str())
                              .c_str());
  const nb::ndarray<> &view = array.view;
  for (size_t d = 0; d < view.ndim(); ++d)
    array.shape.push_back(static_cast<int64_t>(view.shape(d)));
  if (view.device_type() != nb::device::cpu::value)
    throw nb::value_error(
        (describe(argument) +
         ": the array is not in CPU memory (DLPack device type " +
         std::to_string(view.device_type()) +
         "); pass host arrays (tensor.cpu())")
            .c_str());

  nb::dlpack::dtype want = dlpackTypeOf(argument.type);
  nb::dlpack::dtype type = view.dtype();
  bool sameType =
      (type.code == want.code && type.bits == want.bits &&
       type.lanes == want.lanes) ||
      // bf16 bit patterns (an ml_dtypes array's view, or uint16
      // as attnc run takes '<u2')
      (argument.type == ElementType::BF16 && isType(type, Code::UInt, 16));
  if (array.isTorch) {
    // The span the view's strides reach, against the storage held.
    uintptr_t span = 0;
    bool empty = false;
    for (size_t d = 0; d < view.ndim(); ++d) {
      empty |= view.shape(d) == 0;
      if (view.stride(d) < 0) // torch's strides are never negative
        throwTornRead(argument);
      span += uintptr_t(view.shape(d) - 1) * uintptr_t(view.stride(d));
    }
    uintptr_t bytes = (span + 1) * (type.bits / 8);
    if (!empty && !inHeldStorage(array, uintptr_t(view.data()), bytes))
      throwTornRead(argument);
  }
  if (sameType && isCContiguous(view) && view.data() && !array.copied) {
    array.data = view.data();
    return array;
  }
  if (!inPlace.empty())
    throw nb::value_error(
        (inPlace + " (" + argument.typeString() +
         ") must be a C-contiguous CPU array of its dtype, written in place")
            .c_str());
  // A copy is made to the argument's shape only: an array of another shape
  // (torch.ones(1).expand(2**62, 1): its byte count overflows) is refused
  // before anything is allocated or read.
  checkConvertible(argument, type, cast, array.shape);
  if (llvm::ArrayRef<int64_t>(array.shape) !=
      llvm::ArrayRef<int64_t>(argument.shape)) {
    std::string given = sameType ? shapedTypeString(argument.type, array.shape)
                                 : dtypeName(type) + shapeText(array.shape);
    throw nb::value_error((describe(argument) + ": expected " +
                           argument.typeString() + ", got " + given)
                              .c_str());
  }
  array.storage = allocateAligned(size_t(argument.numElements()) *
                                  elementSize(argument.type));
  convert(argument, view, array.shape, array.storage.get());
  array.data = array.storage.get();
  array.copied = true;
  return array;
}

bool attnc::python::torchGradEnabled() {
  const TorchHandles *torch = torchHandles();
  if (!torch)
    return false;
  nb::object enabled = nb::steal(PyObject_CallNoArgs(torch->isGradEnabled));
  if (!enabled.is_valid())
    throw nb::python_error();
  return enabled.is(nb::handle(Py_True));
}

nb::object attnc::python::wrapOutput(const KernelArgument &argument,
                                     AlignedBuffer storage, bool torch) {
  llvm::SmallVector<size_t, 8> shape(argument.shape.begin(),
                                     argument.shape.end());
  nb::dlpack::dtype type = dlpackTypeOf(argument.type);
  // NumPy has no bfloat16: the array holds the bit patterns as uint16 and
  // is viewed as bfloat16 (ml_dtypes' for NumPy, torch's for a tensor).
  bool bf16 = argument.type == ElementType::BF16;
  if (bf16)
    type = nb::dlpack::dtype{static_cast<uint8_t>(Code::UInt), 16, 1};
  void *data = storage.release();
  nb::capsule owner(data, [](void *p) noexcept { std::free(p); });
  nb::object result = nb::ndarray<nb::numpy>(data, shape.size(), shape.data(),
                                             owner, nullptr, type)
                          .cast();
  // torch.from_numpy shares the array's memory, and is cheaper than
  // nanobind's DLPack route to a tensor.
  const TorchHandles *handles = torch ? torchHandles() : nullptr;
  if (!handles) {
    if (bf16)
      return result.attr("view")(
          nb::module_::import_("ml_dtypes").attr("bfloat16"));
    return result;
  }
  PyObject *tensor = PyObject_CallOneArg(handles->fromNumpy, result.ptr());
  if (!tensor)
    throw nb::python_error();
  nb::object wrapped = nb::steal(tensor);
  if (bf16)
    return wrapped.attr("view")(nb::module_::import_("torch").attr("bfloat16"));
  return wrapped;
}
