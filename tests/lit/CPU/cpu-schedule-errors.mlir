// A malformed target description is an error at the module, not a guess.
// RUN: attn-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize))'

// expected-error @+1 {{the CPU target description's 'vector_registers' must be an integer >= 1, got "many"}}
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"vector_registers" = "many">>} {
  func.func @f(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
    linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
    return
  }
}

// -----

// expected-error @+1 {{the CPU target description's vector width (48 bits) is not a whole number of f32 lanes}}
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"max_vector_op_width" = 48 : i64>>} {
  func.func @f(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
    linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
    return
  }
}

// -----

// expected-error @+1 {{the CPU target description's vector registers (4611686018427387904 x 512 bits) exceed 256 x 2048}}
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"vector_registers" = 4611686018427387904 : i64>>} {
  func.func @f(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
    linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
    return
  }
}
