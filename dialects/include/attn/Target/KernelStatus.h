/*===- KernelStatus.h - What a kernel's entries return ------------*- C -*-===//
 *
 * The status codes of attnc's objects, in C so that the CUDA loader
 * (compiler/lib/ObjectCode/attnc_cuda.c, compiled into every GPU object)
 * and the compiler read the same values. Positive values count the
 * embedding ids found out of range; the negative ones are below. Generated
 * headers define them per kernel (NAME_STATUS_...), the runtime turns them
 * into messages; attn/Target/KernelAbi.h says which object kind returns which.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_TARGET_KERNELSTATUS_H
#define ATTN_TARGET_KERNELSTATUS_H

/* Success. */
#define ATTNC_STATUS_OK 0
/* The machine lacks the instruction set of every CPU the object was
   compiled for (nothing ran), or the OS refused the AMX tile state its
   bf16 GEMMs need (the outputs are not valid). */
#define ATTNC_STATUS_UNSUPPORTED_CPU (-1)
/* No CUDA driver (libcuda.so.1 not found) or no GPU. */
#define ATTNC_STATUS_NO_CUDA_DRIVER (-2)
/* The GPU cannot run the object's code (an older compute capability, or an
   sm_90a object on another chip). */
#define ATTNC_STATUS_WRONG_GPU (-3)
/* A CUDA call failed: out of device memory, a module that did not load, a
   launch that failed. */
#define ATTNC_STATUS_CUDA_ERROR (-4)
/* Halide's pipeline reported an error (its message went to stderr). */
#define ATTNC_STATUS_HALIDE_ERROR (-5)
/* A KV cache position was out of range: some pos[b] < 0 or
   pos[b] + T > L. Nothing was written to the caches; the outputs are not
   valid. */
#define ATTNC_STATUS_CACHE_POSITION (-6)
/* A buffer the kernel needs for its own work could not be allocated
   (malloc returned NULL). What it had allocated is freed; the outputs are
   not valid, and a state may have been partly written. */
#define ATTNC_STATUS_OUT_OF_MEMORY (-7)

#endif /* ATTN_TARGET_KERNELSTATUS_H */
