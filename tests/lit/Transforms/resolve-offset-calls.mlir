// attn-resolve-offset-calls: a call of an attn-forward-call-slices
// declaration calls its callee with the pointers advanced by the recorded
// byte offsets; private functions get internal linkage.
// RUN: attn-opt %s --attn-resolve-offset-calls | FileCheck %s

// CHECK-NOT: @k_prepared.at.0
// CHECK: llvm.func internal @k_prepared(
// CHECK-LABEL: llvm.func @c_prepared(
// CHECK-SAME: %[[X:.*]]: !llvm.ptr, %[[PACKED:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr)
// CHECK: %[[N:.*]] = llvm.mlir.constant(512 : i64) : i64
// CHECK: %[[AT:.*]] = llvm.getelementptr inbounds %[[PACKED]][%[[N]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[R:.*]] = llvm.call @k_prepared(%[[X]], %[[AT]], %[[OUT]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.return %[[R]]
// External declarations keep their linkage.
// CHECK: llvm.func @free(
llvm.func @k_prepared.at.0(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    attributes {attn.offset_call_bytes = array<i64: 0, 512, 0>, attn.offset_call_of = @k_prepared, sym_visibility = "private"}
llvm.func @k_prepared(%x: !llvm.ptr, %p: !llvm.ptr, %out: !llvm.ptr) -> i32
    attributes {sym_visibility = "private"} {
  %c = llvm.mlir.constant(0 : i32) : i32
  llvm.return %c : i32
}
llvm.func @c_prepared(%x: !llvm.ptr, %packed: !llvm.ptr, %out: !llvm.ptr) -> i32 {
  %r = llvm.call @k_prepared.at.0(%x, %packed, %out) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.return %r : i32
}
llvm.func @free(!llvm.ptr) attributes {sym_visibility = "private"}
