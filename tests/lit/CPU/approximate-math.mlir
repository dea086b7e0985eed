// attn-approximate-math: math.exp, math.erf and math.tanh become
// polynomials on f32 scalars and vectors, so no libm call (expf, erff,
// tanhf) remains.
// RUN: attn-opt %s --attn-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @exp_vector
func.func @exp_vector(%x: vector<16xf32>) -> vector<16xf32> {
  // CHECK-NOT: math.exp
  // CHECK: math.fma {{.*}} : vector<16xf32>
  // CHECK: arith.bitcast {{.*}} : vector<16xi32> to vector<16xf32>
  // CHECK-NOT: math.exp
  %0 = math.exp %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// CHECK-LABEL: func.func @exp_scalar
func.func @exp_scalar(%x: f32) -> f32 {
  // CHECK-NOT: math.exp
  // CHECK: math.fma {{.*}} : f32
  %0 = math.exp %x : f32
  return %0 : f32
}

// gelu's erf: a rational polynomial, odd in x, clamped where erf is +-1.
// CHECK-LABEL: func.func @erf_vector
func.func @erf_vector(%x: vector<16xf32>) -> vector<16xf32> {
  // CHECK-NOT: math.erf
  // CHECK: math.fma {{.*}} : vector<16xf32>
  // CHECK: arith.divf {{.*}} : vector<16xf32>
  // CHECK-NOT: math.erf
  %0 = math.erf %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// CHECK-LABEL: func.func @erf_scalar
func.func @erf_scalar(%x: f32) -> f32 {
  // CHECK-NOT: math.erf
  // CHECK: math.fma {{.*}} : f32
  %0 = math.erf %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @tanh_vector
func.func @tanh_vector(%x: vector<8xf32>) -> vector<8xf32> {
  // CHECK-NOT: math.tanh
  // CHECK: math.fma {{.*}} : vector<8xf32>
  // CHECK-NOT: math.tanh
  %0 = math.tanh %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// Other math ops are left alone.
// CHECK-LABEL: func.func @sqrt_untouched
func.func @sqrt_untouched(%x: f32) -> f32 {
  // CHECK: math.sqrt
  %0 = math.sqrt %x : f32
  return %0 : f32
}
