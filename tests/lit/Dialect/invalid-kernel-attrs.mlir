// Every rule of the attn.* attributes on kernels (KernelAttributes.cpp), one
// case each: the verifier refuses them wherever IR is parsed, so no pass or
// code generator reads an unchecked one.
// RUN: attn-opt %s --split-input-file --verify-diagnostics

// attn.updates must be an i64, not a string (was an ABI mismatch, SIGSEGV)
// expected-error @+1 {{'attn.updates' of result #0 must be the index of the state argument it updates, an i64 (e.g. 2 : i64), got "x"}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = "x"}) {
  return %c : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'attn.updates' of result #0 must be the index of the state argument it updates, an i64 (e.g. 2 : i64), got 0 : i32}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = 0 : i32}) {
  return %c : tensor<2x8xf32>
}

// -----

// A negative or out-of-range index read out of bounds (SIGSEGV).
// expected-error @+1 {{'attn.updates' of result #0 is -1, which is not an argument of 'k' (it has 1)}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = -1 : i64}) {
  return %c : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'attn.updates' of result #0 is 1, which is not an argument of 'k' (it has 1)}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = 1 : i64}) {
  return %c : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'attn.updates' of result #0 names argument #0 ('X'), which is not a state (attn.role = "state"): only a state is updated in place}}
func.func @k(%x: tensor<2x8xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = 0 : i64}) {
  return %x : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'attn.updates' of result #0 ('tensor<2x4xf32>') names argument #0 ('C') of another type ('tensor<2x8xf32>'): a state's new value has its type}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"},
             %y: tensor<2x4xf32> {attn.name = "Y", attn.role = "input"})
    -> (tensor<2x4xf32> {attn.name = "C", attn.updates = 0 : i64}) {
  return %y : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{'attn.updates' of results #0 and #1 both name argument #0 ('C'); a state is updated by one result}}
func.func @k(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "C", attn.updates = 0 : i64},
        tensor<2x8xf32> {attn.name = "D", attn.updates = 0 : i64}) {
  return %c, %c : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// expected-error @+1 {{'attn.role' of argument #0 must be "input", "param" or "state", got "weight"}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "weight"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.role' of argument #0 must be "input", "param" or "state", got "output"}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "output"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// A newline and #error landed in the generated header.
// expected-error @+1 {{'attn.name' of argument #0 is 'X\0A#error boom', which is not a C identifier (ASCII letters, digits and '_', not beginning with a digit); rename it}}
func.func @k(%x: tensor<2xf32> {attn.name = "X\n#error boom", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// `attnc run --output-dir D` wrote Y.npy outside D.
// expected-error @+1 {{'attn.name' of result #0 is '../../Y', which is not a C identifier}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "../../Y"}) {
  return %x : tensor<2xf32>
}

// -----

// A NUL byte aborted Halide.
// expected-error @+1 {{'attn.name' of argument #0 is 'X\00', which is not a C identifier}}
func.func @k(%x: tensor<2xf32> {attn.name = "X\00", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.name' of argument #0 is '', which is empty}}
func.func @k(%x: tensor<2xf32> {attn.name = "", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.name' of result #0 is 'int', which is a C/C++ keyword}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "int"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.name' of argument #0 must be a string, e.g. "X"}}
func.func @k(%x: tensor<2xf32> {attn.name = 3 : i64, attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{arguments #0 and #1 are both named 'X'; each buffer of a kernel needs a name of its own}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"},
             %y: tensor<2xf32> {attn.name = "X", attn.role = "param"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{results #0 and #1 are both named 'Y'}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}, tensor<2xf32> {attn.name = "Y"}) {
  return %x, %x : tensor<2xf32>, tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.nme' on argument #0 is not an attribute of the attn dialect (arguments take attn.name and attn.role)}}
func.func @k(%x: tensor<2xf32> {attn.nme = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.role' on result #0 is not an attribute of the attn dialect (results take attn.name and attn.updates)}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y", attn.role = "input"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.dim_names' needs its companion: attn.dim_names (an array of strings) and attn.dim_values (array<i64: ...>) of one length, together}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"})
    attributes {attn.dim_names = ["N", "M"], attn.dim_values = array<i64: 2>} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.dim_values' needs its companion}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"})
    attributes {attn.dim_values = array<i64: 2>} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.dim_names' holds dim 'N M', which is not a C identifier}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"})
    attributes {attn.dim_names = ["N M"], attn.dim_values = array<i64: 2>} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.dim_names' gives dim 'N' the size 0; a dim is a size from 1 to 2^40}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"})
    attributes {attn.dim_names = ["N"], attn.dim_values = array<i64: 0>} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.dim_names' names two dims 'N'}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"})
    attributes {attn.dim_names = ["N", "N"], attn.dim_values = array<i64: 2, 2>} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.packed_elements' must be a count of elements, an i64 of at least 0}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) attributes {attn.packed_elements = -4 : i64} {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.kernel_part' must be "prepare" or "prepared"}}
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) attributes {attn.kernel_part = 1 : i64} {
  return %x : tensor<2xf32>
}

// -----

// A number here was dereferenced as a symbol by attn-resolve-offset-calls.
// expected-error @+1 {{'attn.offset_call_of' must name the function called, e.g. @k}}
func.func private @k(tensor<2xf32>) attributes {attn.offset_call_of = 3 : i64}

// -----

// expected-error @+1 {{'attn.offset_call_bytes' must be the arguments' offsets in bytes, array<i64: ...> of values at least 0}}
func.func private @k(tensor<2xf32>) attributes {attn.offset_call_bytes = array<i64: -8>}

// -----

// A non-float type here was cast to a FloatType by attn-decompose.
func.func @k(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'attn.inner_rounding' must be a float type, e.g. bf16}}
  %0 = attn.linear %x, %w {attn.inner_rounding = i32} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @k(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'attn.bf16_pair_gemm' is a unit attribute}}
  %0 = attn.relu %x {attn.bf16_pair_gemm = 1 : i64} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'attn.heads' is not an attribute of the attn dialect}}
func.func @k(%x: tensor<2xf32>) -> tensor<2xf32> attributes {attn.heads = 2 : i64} {
  return %x : tensor<2xf32>
}
