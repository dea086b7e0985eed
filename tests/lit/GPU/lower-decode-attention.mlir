// attn-gpu-lower-decode-attention: two launches (Flash-Decoding). The first,
// a block per (entry, group of rows, chunk of cache rows) and a warp per
// row, walks the chunk's keys its entry's tokens see, the lanes' partial
// dot products added with xor shuffles, each row's own keys only in its
// online softmax; it stores each row's partial max, sum and output for its
// chunk. The second, a warp per row, combines the chunks in chunk order and
// stores the rows of entries whose position is in range.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-lower-decode-attention))' \
// RUN:   | FileCheck %s

// 2 entries, 4 query heads of 64 over 2 kv heads, a bf16 cache of 128 rows,
// a window of 8: rows = 4 per entry (4 warps, one group), chunks of 64 rows
// (kDecodeMinChunkKeys): 2 x 1 x 2 blocks, then 8 rows in 2 blocks.
// CHECK-LABEL: func.func @gqa_window
// CHECK-SAME: (%[[Q:.*]]: memref<2x1x256xf32>, %[[K:.*]]: memref<2x128x128xbf16>, %[[V:.*]]: memref<2x128x128xbf16>, %[[POS:.*]]: memref<2xi32>, %[[O:.*]]: memref<2x1x256xf32>)
// CHECK:         %[[MAX:.*]] = memref.alloc() : memref<8x2xf32>
// CHECK:         %[[SUM:.*]] = memref.alloc() : memref<8x2xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<8x2x64xf32>
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         gpu.launch async blocks(%[[BLOCK:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]], {{.*}})
// the block's chunk and entry, the entry's position and whether it fits
// CHECK:           %[[CHUNK:.*]] = arith.remui %[[BLOCK]], %{{.*}} : index
// CHECK:           %[[B:.*]] = arith.divui %[[BLOCK]], %{{.*}} : index
// CHECK:           %[[P32:.*]] = memref.load %[[POS]][%[[B]]] : memref<2xi32>
// CHECK:           %[[P:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK:           %[[FITS:.*]] = arith.cmpi sle, %{{.*}}, %{{.*}} : index
// CHECK:           %[[NONNEG:.*]] = arith.cmpi sge, %[[P]], %{{.*}} : index
// CHECK:           %[[VALID:.*]] = arith.andi %[[NONNEG]], %[[FITS]] : i1
// the first token's window, and the end p + T (the window's start when out
// of range: no key)
// CHECK:           %[[BEGIN:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK:           %[[END:.*]] = arith.select %[[VALID]], %{{.*}}, %[[BEGIN]] : index
// the chunk's part of [begin, end)
// CHECK:           %[[CHUNK0:.*]] = arith.muli %[[CHUNK]], %{{.*}} : index
// CHECK:           %[[FROM:.*]] = arith.maxsi %[[BEGIN]], %[[CHUNK0]] : index
// CHECK:           %[[TO0:.*]] = arith.minsi %[[END]], %{{.*}} : index
// CHECK:           %[[TO:.*]] = arith.maxsi %[[FROM]], %[[TO0]] : index
// the warp's row (past the entry's rows: masked, not stored) and its lane's
// query columns
// CHECK:           %[[LANE:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK:           %[[LIVE:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK:           %[[ROW:.*]] = arith.select %[[LIVE]], %{{.*}}, %{{.*}} : index
// CHECK:           memref.load %[[Q]][%[[B]], %{{.*}}, %{{.*}}] : memref<2x1x256xf32>
// CHECK:           memref.load %[[Q]][%[[B]], %{{.*}}, %{{.*}}] : memref<2x1x256xf32>
// CHECK:           %[[KEYS:.*]]:4 = scf.for %[[J:.*]] = %[[FROM]] to %[[TO]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK:             memref.load %[[K]][%[[B]], %[[J]], %{{.*}}] : memref<2x128x128xbf16>
// CHECK:             arith.extf %{{.*}} : bf16 to f32
// CHECK:             gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4:     gpu.shuffle  xor
// only the row's own keys: [p + t + 1 - 8, p + t + 1)
// CHECK:             %[[BELOWEND:.*]] = arith.cmpi slt, %[[J]], %{{.*}} : index
// CHECK:             %[[FROMLO:.*]] = arith.cmpi sge, %[[J]], %{{.*}} : index
// CHECK:             %[[SEES:.*]] = arith.andi %[[BELOWEND]], %[[FROMLO]] : i1
// CHECK:             %[[VISIBLE:.*]] = arith.andi %[[LIVE]], %[[SEES]] : i1
// CHECK:             arith.select %[[VISIBLE]], %{{.*}}, %{{.*}} : f32
// CHECK:             math.exp
// CHECK:             math.exp
// CHECK:             memref.load %[[V]][%[[B]], %[[J]], %{{.*}}] : memref<2x128x128xbf16>
// CHECK:             scf.yield
// lane 0 stores the max and sum, every lane its output columns
// CHECK:           %[[AT:.*]] = arith.addi %{{.*}}, %[[ROW]] : index
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %[[KEYS]]#0, %[[MAX]][%[[AT]], %[[CHUNK]]] : memref<8x2xf32>
// CHECK-NEXT:        memref.store %[[KEYS]]#1, %[[SUM]][%[[AT]], %[[CHUNK]]] : memref<8x2xf32>
// CHECK:           scf.if %[[LIVE]]
// CHECK-NEXT:        memref.store %[[KEYS]]#2, %[[OUT]][%[[AT]], %[[CHUNK]], %{{.*}}] : memref<8x2x64xf32>
// CHECK:           scf.if %[[LIVE]]
// CHECK-NEXT:        memref.store %[[KEYS]]#3, %[[OUT]][%[[AT]], %[[CHUNK]], %{{.*}}] : memref<8x2x64xf32>
// CHECK:           gpu.terminator
// the combining launch: the maximum over the entry's chunks, then the sums
// in chunk order, stored where the entry's position is in range
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[C2]], {{.*}}) threads({{.*}}) in (%{{.*}} = %{{.*}}, {{.*}})
// CHECK:           %[[M:.*]] = scf.for %[[C:.*]] = %[[FIRST:.*]] to %[[LAST:.*]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK:             memref.load %[[MAX]][%{{.*}}, %[[C]]] : memref<8x2xf32>
// CHECK:             arith.maximumf
// CHECK:           %[[SUMS:.*]]:3 = scf.for %[[C2:.*]] = %[[FIRST]] to %[[LAST]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32)
// CHECK:             %[[MC:.*]] = memref.load %[[MAX]][%{{.*}}, %[[C2]]] : memref<8x2xf32>
// CHECK:             %[[D:.*]] = arith.subf %[[MC]], %[[M]] : f32
// CHECK:             %[[F:.*]] = math.exp %[[D]] : f32
// CHECK:             memref.load %[[SUM]][%{{.*}}, %[[C2]]] : memref<8x2xf32>
// CHECK:             memref.load %[[OUT]][%{{.*}}, %[[C2]], %{{.*}}] : memref<8x2x64xf32>
// CHECK:           %[[STORES:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:           scf.if %[[STORES]]
// CHECK-NEXT:        %[[R:.*]] = arith.divf %[[SUMS]]#1, %[[SUMS]]#0 : f32
// CHECK:             memref.store %[[R]], %[[O]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x1x256xf32>
// CHECK:           gpu.terminator
// CHECK:         memref.dealloc %[[MAX]]
// CHECK:         memref.dealloc %[[SUM]]
// CHECK:         memref.dealloc %[[OUT]]
func.func @gqa_window(%q: memref<2x1x256xf32>, %k: memref<2x128x128xbf16>,
                      %v: memref<2x128x128xbf16>, %pos: memref<2xi32>,
                      %o: memref<2x1x256xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%o) window(8) heads(4)
      kv_heads(2) scale(0.125)
      : (memref<2x1x256xf32>, memref<2x128x128xbf16>, memref<2x128x128xbf16>,
         memref<2xi32>, memref<2x1x256xf32>) -> ()
  return
}

// -----

// A long cache at batch 1: chunks sized for about two blocks per
// multiprocessor (132 on sm_90a): 12 rows in 3 blocks of 4 warps, chunks of
// 96 rows (8192 / 88 rounded up to the warp), 86 of them: 258 blocks.
// CHECK-LABEL: func.func @long_cache
// CHECK:         memref.alloc() : memref<12x86xf32>
// CHECK:         memref.alloc() : memref<12x86xf32>
// CHECK:         memref.alloc() : memref<12x86x64xf32>
// CHECK:         %[[BLOCKS:.*]] = arith.constant 258 : index
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[BLOCKS]], {{.*}})
func.func @long_cache(%q: memref<1x1x768xf32>, %k: memref<1x8192x768xf32>,
                      %v: memref<1x8192x768xf32>, %pos: memref<1xi32>,
                      %o: memref<1x1x768xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%o) heads(12) scale(0.125)
      : (memref<1x1x768xf32>, memref<1x8192x768xf32>, memref<1x8192x768xf32>,
         memref<1xi32>, memref<1x1x768xf32>) -> ()
  return
}
