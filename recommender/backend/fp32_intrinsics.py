"""Float32 AVX-512 micro-kernels as TVM tensor intrinsics.

TVM registers x86 intrinsics for int8 dot products only (VNNI); a float32 kernel's inner loops
are whatever MetaSchedule's tiling and LLVM's vectoriser make of them. These give its
``MultiLevelTilingWithIntrin`` rule a fixed fp32 inner kernel to tile around
(``logs.search_space``'s ``fma16`` and ``micro7x16`` variants):

- ``FMA16``: ``C[0:16] += A[0] * B[0:16]``, one broadcast FMA on a 16-lane register. It maps
  onto the innermost spatial axis of 16 (a blocked convolution's output-channel block, a
  matmul's columns), whatever the stride.
- ``MICRO``: ``C[0:7, 0:16] += A[0:7, 0:16] @ B[0:16, 0:16]``, seven accumulator registers kept
  across sixteen reduction steps (the register blocking of oneDNN-style kernels). It maps onto
  (output width, channel block, input channels): the input channels must be the innermost
  reduction axis, which ``ReorderConvReduction`` (in ``logs.search_space``) arranges for TOPI's
  ``conv2d_NCHWc``; a convolution of stride 2 is left as it was (its input window is strided).

Records tuned with them hold ``tensorize`` steps naming them, and TVM looks the names up as it
decodes a record: the places that decode records of a log (``SourceSchedule.trace``,
``TuningLog.database``, ``history.timed_records``) register them first (0.1 s, once).
"""

from __future__ import annotations

import threading

FMA16 = "recommender_f32_fma16"
MICRO = "recommender_f32_micro7x16x16"
LANES = 16  # fp32 lanes of an AVX-512 register
MICRO_ROWS, MICRO_DEPTH = 7, 16  # 7 divides every output width of the zoo's stride-1 3x3s


_REGISTERING = threading.Lock()  # traces are decoded on several threads when ranking


def register() -> None:
    """Register both intrinsics (once per process)."""
    from tvm.s_tir import TensorIntrin

    with _REGISTERING:
        if TensorIntrin.get(FMA16, allow_missing=True) is not None:
            return
        TensorIntrin.register(FMA16, *_fma16())
        TensorIntrin.register(MICRO, *_micro(MICRO_ROWS, LANES, MICRO_DEPTH))


def _fma16():
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def desc(
        A: T.Buffer((1,), "float32", offset_factor=1),
        B: T.Buffer((16,), "float32", offset_factor=1),
        C: T.Buffer((16,), "float32", offset_factor=1),
    ) -> None:
        # spatial only: a desc loop of extent 1 never matches (blockize drops unit iterators)
        with T.sblock("root"):
            T.reads(C[0:16], A[0:1], B[0:16])
            T.writes(C[0:16])
            for j in T.serial(16):
                with T.sblock("update"):
                    vj = T.axis.remap("S", [j])
                    C[vj] = C[vj] + A[0] * B[vj]

    @T.prim_func(s_tir=True)
    def impl(
        A: T.Buffer((1,), "float32", offset_factor=1),
        B: T.Buffer((16,), "float32", offset_factor=1),
        C: T.Buffer((16,), "float32", offset_factor=1),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:1], B[0:16])
            T.writes(C[0:16])
            C[T.ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.fmuladd.v16f32"),
                T.broadcast(A[0], 16),
                B.vload([0], "float32x16"),
                C.vload([0], "float32x16"),
                dtype="float32x16",
            )

    return desc, impl


def _micro(rows: int, lanes: int, depth: int):
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        # symbolic row strides: the operands are tiles of larger buffers
        A = T.match_buffer(a, (rows, depth), "float32", offset_factor=1, strides=[T.int32(), 1])
        B = T.match_buffer(b, (depth, lanes), "float32", offset_factor=1, strides=[T.int32(), 1])
        C = T.match_buffer(c, (rows, lanes), "float32", offset_factor=1, strides=[T.int32(), 1])
        with T.sblock("root"):
            T.reads(C[0:rows, 0:lanes], A[0:rows, 0:depth], B[0:depth, 0:lanes])
            T.writes(C[0:rows, 0:lanes])
            for i, j, k in T.grid(rows, lanes, depth):
                with T.sblock("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (rows, depth), "float32", offset_factor=1, strides=[T.int32(), 1])
        B = T.match_buffer(b, (depth, lanes), "float32", offset_factor=1, strides=[T.int32(), 1])
        C = T.match_buffer(c, (rows, lanes), "float32", offset_factor=1, strides=[T.int32(), 1])
        with T.sblock("root"):
            T.reads(C[0:rows, 0:lanes], A[0:rows, 0:depth], B[0:depth, 0:lanes])
            T.writes(C[0:rows, 0:lanes])
            for k in T.serial(depth):
                for i in T.unroll(rows):  # LLVM fuses the multiply-add (AllowFPOpFusion=Fast)
                    C[i, T.ramp(0, 1, lanes)] = (
                        C[i, T.ramp(0, 1, lanes)]
                        + T.broadcast(A[i, k], lanes) * B[k, T.ramp(0, 1, lanes)]
                    )

    return desc, impl
