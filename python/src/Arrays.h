//===- Arrays.h - NumPy arrays and torch tensors as kernel buffers -*- C++ -*-//
//
// How the Python module hands arrays to a kernel: an array that is already
// what the kernel reads (CPU memory, C-contiguous, the argument's dtype) is
// passed as it is; any other is converted into a buffer of its own, where
// the conversion is exact (a strided view, int64 lengths that fit in int32)
// or asked for (float64 -> float32 with cast=True). Arrays come in through
// nanobind's ndarray caster, which speaks NumPy's buffer protocol and
// DLPack (torch), so neither NumPy nor torch is linked.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_PYTHON_ARRAYS_H
#define ATTNC_PYTHON_ARRAYS_H

#include "attnc/Codegen/KernelSignature.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnc::python {

/// Memory from aligned_alloc at a 64-byte boundary (the kernels load rows
/// as whole cache lines), freed by free.
struct AlignedFree {
  void operator()(void *p) const;
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;
AlignedBuffer allocateAligned(size_t bytes);

/// One array passed for argument `argument`, ready for the kernel: `data`
/// points into the caller's array (`copied` false) or into `storage`.
struct ArgumentArray {
  const KernelArgument *argument = nullptr;
  nanobind::object source;
  /// A bf16 NumPy array's uint16 view (ml_dtypes' arrays refuse the buffer
  /// protocol), held for the call.
  nanobind::object bitsView;
  /// A torch tensor's storage, held for the call: another thread's
  /// `X.set_(...)` then cannot free the memory the kernel reads or writes.
  nanobind::object torchStorage;
  /// Its data pointer and size in bytes, read once when it was taken: the
  /// held storage does not move.
  uintptr_t storageBegin = 0;
  uintptr_t storageBytes = 0;
  nanobind::ndarray<> view;
  AlignedBuffer storage;
  void *data = nullptr;
  std::vector<int64_t> shape;
  bool copied = false;
  /// True for a torch.Tensor (results are then torch tensors too).
  bool isTorch = false;
  /// A torch tensor with requires_grad set (read as its values: the kernel
  /// computes no gradient, so a call that needs one goes through autograd).
  bool requiresGrad = false;
  /// A read-only array (NumPy's writeable flag off): fine as an input or
  /// param, never as an output.
  bool readOnly = false;
};

/// Reads `value`, given for `argument`, as an array. Throws ValueError
/// (nanobind::value_error) with a message naming the argument when it is
/// not an array, lives on another device, has no data (a FakeTensor), has
/// a dtype the kernel cannot take exactly (float64 is taken when `cast`),
/// or must be copied and has another shape (checked before any byte is
/// copied). The shape of an array read in place is left to the runtime's
/// check, whose message is the same. A torch tensor with the negative view
/// bit (torch._neg_view) is read as the values it stands for, in a copy.
/// `inPlace` (a state, an out= array: the kernel writes the caller's
/// memory): an array that would need a copy is a ValueError instead, named
/// by `what`.
ArgumentArray readArray(const KernelArgument &argument, nanobind::handle value,
                        bool cast, const std::string &inPlace = "");

/// torch.is_grad_enabled(), false without torch.
bool torchGradEnabled();

/// A new NumPy array or torch tensor (`torch`) of `argument`'s dtype and
/// shape, owning `storage`.
nanobind::object wrapOutput(const KernelArgument &argument,
                            AlignedBuffer storage, bool torch);

} // namespace attnc::python

#endif // ATTNC_PYTHON_ARRAYS_H
