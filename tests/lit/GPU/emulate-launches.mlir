// attn-gpu-emulate-launches: a launch becomes loops over its blocks and
// threads (z, y, x), the ids the loop counters; one with barriers is cut
// at them (a loop over the threads per stretch), what every thread of a
// block computes alike once per block, a shuffle is cut at like a barrier
// (emulate-shuffles-run.mlir runs them); reductions across threads,
// barriers and shuffles under divergent control flow and loop bounds that
// may differ between threads are errors.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-emulate-launches))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @launch
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK:           scf.for %{{.*}} = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK:             scf.for %[[BX:.*]] = %[[C0]] to %[[C3]] step %[[C1]]
// CHECK:               scf.for
// CHECK:                 scf.for
// CHECK:                   scf.for %[[TX:.*]] = %[[C0]] to %[[C64]] step %[[C1]]
// CHECK:                     %[[BASE:.*]] = arith.muli %[[BX]], %[[C64]]
// CHECK:                     arith.addi %[[BASE]], %[[TX]]
// CHECK-NOT:     gpu.launch
func.func @launch(%a: memref<192xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
                        threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %a[%i] : memref<192xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i] : memref<192xf32>
    gpu.terminator
  }
  return
}

// -----

// Barriers and workgroup memory: per block, each stretch between barriers
// is a loop over the threads; a value that crosses a barrier (%i, %v) is
// kept per thread; the workgroup buffer is one host buffer.
// CHECK-LABEL: func.func @barrier
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[SHARED:.*]] = memref.alloca() : memref<64xf32>
// CHECK-DAG:     %[[KEPT:.*]] = memref.alloca() : memref<64xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %[[BX:.*]] =
// CHECK:               scf.for %[[T:.*]] = %{{.*}} to %[[C64]]
// CHECK:                 memref.store %{{.*}}, %[[SHARED]]
// CHECK:                 memref.store %{{.*}}, %[[KEPT]][%[[T]]]
// CHECK:               }
// CHECK:               scf.for %[[U:.*]] = %{{.*}} to %[[C64]]
// CHECK-DAG:             memref.load %[[KEPT]][%[[U]]]
// CHECK-DAG:             memref.load %[[SHARED]]
// CHECK-NOT:     gpu.barrier
// CHECK-NOT:     gpu.launch
func.func @barrier(%a: memref<128xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<64xf32, #gpu.address_space<workgroup>>) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %a[%i] : memref<128xf32>
    memref.store %v, %shared[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %r = arith.subi %c63, %tx : index
    %w = memref.load %shared[%r] : memref<64xf32, #gpu.address_space<workgroup>>
    %s = arith.addf %v, %w : f32
    memref.store %s, %a[%i] : memref<128xf32>
    gpu.terminator
  }
  return
}

// -----

// A loop holding barriers runs once per block around its stretches; its
// state is kept per thread: set from the init before it, written back by
// its yield, read after it.
// CHECK-LABEL: func.func @loop_with_barriers
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         scf.for %[[T0:[a-z0-9]+]] = %{{.*}} to %c32
// CHECK:           memref.store %{{.*}}, %[[STATE:.*]][%[[T0]]] : memref<32xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C4]]
// CHECK:           scf.for
// CHECK:           scf.for
// CHECK:             memref.load %[[STATE]]
// CHECK:           scf.for %[[T1:[a-z0-9]+]] =
// CHECK:             memref.store %{{.*}}, %[[STATE]][%[[T1]]]
// CHECK:         scf.for %[[T2:[a-z0-9]+]] =
// CHECK:           memref.load %[[STATE]][%[[T2]]]
func.func @loop_with_barriers(%a: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<32xf32, #gpu.address_space<workgroup>>) {
    %sum = scf.for %s = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %a[%tx] : memref<32xf32>
      memref.store %v, %shared[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %shared[%c0] : memref<32xf32, #gpu.address_space<workgroup>>
      %next = arith.addf %acc, %w : f32
      gpu.barrier
      scf.yield %next : f32
    }
    memref.store %sum, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A loop holding barriers whose bound the block computes from its id and a
// buffer the launch only reads (valid_lens): the bound is computed once per
// block, outside the thread loops, and the loop runs once per block.
// CHECK-LABEL: func.func @uniform_bound
// CHECK-SAME: (%[[A:.*]]: memref<64xf32>, %[[LENS:.*]]: memref<4xi32>)
// CHECK:         scf.for %[[BX:.*]] = %{{.*}} to %c4{{[_0-9]*}}
// CHECK-NOT:       scf.for
// CHECK:           %[[RAW:.*]] = memref.load %[[LENS]][%[[BX]]] : memref<4xi32>
// CHECK:           %[[LEN:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK:           %[[BOUND:.*]] = arith.minsi %[[LEN]], %{{.*}} : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[BOUND]]
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c64{{[_0-9]*}}
// CHECK:               memref.store %{{.*}}, %{{.*}} : memref<64xf32>
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c64{{[_0-9]*}}
// CHECK:               memref.load %{{.*}} : memref<64xf32>
func.func @uniform_bound(%a: memref<64xf32>, %lens: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<64xf32, #gpu.address_space<workgroup>>) {
    %raw = memref.load %lens[%bx] : memref<4xi32>
    %len = arith.index_cast %raw : i32 to index
    %bound = arith.minsi %len, %c8 : index
    scf.for %i = %c0 to %bound step %c1 {
      %x = memref.load %a[%tx] : memref<64xf32>
      memref.store %x, %tile[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %y = memref.load %tile[%tx] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %a[%tx] : memref<64xf32>
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

// A bound read from memory the launch writes may differ between threads.
func.func @bound_from_written_memory(%a: memref<64xf32>, %n: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %tx, %n[%c0] : memref<1xindex>
    %bound = memref.load %n[%c0] : memref<1xindex>
    // expected-error @below {{holds a gpu.barrier but has a bound that may differ between threads; the emulation cannot split it}}
    scf.for %i = %c0 to %bound step %c1 {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @divergent_barrier(%a: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %low = arith.cmpi ult, %tx, %c32 : index
    // expected-error @below {{holds a gpu.barrier under control flow that threads may take differently; the emulation splits only scf.for loops}}
    scf.if %low {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @per_thread_bound(%a: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    // expected-error @below {{holds a gpu.barrier but has a bound that may differ between threads; the emulation cannot split it}}
    scf.for %i = %c0 to %tx step %c1 {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

// A shuffle is cut at like a barrier: the value is kept per thread, and
// the thread after the cut reads the slot of the lane it names (thread - lane
// + (lane ^ 1)); what it computes from the result comes after.
// CHECK-LABEL: func.func @shuffle
// CHECK-DAG:     %[[VALUES:.*]] = memref.alloca() : memref<64xf32>
// CHECK-DAG:     %[[RESULTS:.*]] = memref.alloca() : memref<64xf32>
// CHECK:               scf.for %[[T:[^ ]*]] = %{{.*}} to %c64
// CHECK:                 memref.store %{{.*}}, %[[VALUES]][%[[T]]]
// CHECK:               scf.for %[[U:[^ ]*]] = %{{.*}} to %c64
// CHECK:                 %[[LANE:.*]] = arith.remui %[[U]], %c32
// CHECK:                 %[[SOURCE:.*]] = arith.xori %[[LANE]]
// CHECK:                 %[[BASE:.*]] = arith.subi %[[U]], %[[LANE]]
// CHECK:                 %[[FROM:.*]] = arith.addi %[[BASE]], %[[SOURCE]]
// CHECK:                 %[[PICK:.*]] = arith.select %{{.*}}, %[[FROM]], %[[U]]
// CHECK:                 %[[GOT:.*]] = memref.load %[[VALUES]][%[[PICK]]]
// CHECK:                 memref.store %[[GOT]], %[[RESULTS]][%[[U]]]
// CHECK:               scf.for %[[W:[^ ]*]] = %{{.*}} to %c64
// CHECK:                 memref.load %[[RESULTS]][%[[W]]]
// CHECK:                 arith.addf
// CHECK-NOT:     gpu.shuffle
func.func @shuffle(%a: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1 : i32
  %width = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<64xf32>
    %y, %valid = gpu.shuffle xor %x, %one, %width : f32
    %z = arith.addf %x, %y : f32
    memref.store %z, %a[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @divergent_shuffle(%a: memref<64xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1 : i32
  %width = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<64xf32>
    %inside = arith.cmpi ult, %tx, %n : index
    // expected-error @below {{holds a gpu.shuffle under control flow that threads may take differently; the emulation splits only scf.for loops}}
    scf.if %inside {
      %y, %valid = gpu.shuffle xor %x, %one, %width : f32
      memref.store %y, %a[%tx] : memref<64xf32>
    }
    gpu.terminator
  }
  return
}

// -----

func.func @all_reduce(%a: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  // expected-error @below {{has threads that reduce values together (gpu.subgroup_reduce, gpu.all_reduce); the emulation runs only barriers and shuffles}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<64xf32>
    %sum = gpu.all_reduce add %x uniform {} : (f32) -> (f32)
    memref.store %sum, %a[%tx] : memref<64xf32>
    gpu.terminator
  }
  return
}
