# The loops a program's instructions call besides pyet's kernels: NumPy's
# ufunc loops (from C, or on blocks from Python), pyet's kernels as whole
# loops, and user functions (pyet.F) with their errors.

cdef int TYPENUM[5]
for _i in range(DT_COUNT):
    TYPENUM[_i] = DTYPES[_i].num


cdef inline void call_np_loop(Program prog, int i, pyet_instr *ins, pyet_intp n, void *out,
                              void **inp) noexcept nogil:
    # an op's NumPy loop called straight (Program.cloop): contiguous blocks in
    # and out, as NumPy's ufunc hands them to it; the flags it raises are the
    # pass's, as a kernel's
    cdef char *args[PYET_MAX_IN + 1]
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp dim = n
    cdef int j
    for j in range(ins.nin):
        args[j] = <char *>inp[j]
        steps[j] = pyet_itemsize[ins.dt]
    args[ins.nin] = <char *>out
    steps[ins.nin] = pyet_itemsize[ins.dt_out]
    prog.cloop[i](args, &dim, steps, prog.cdata[i])


cdef dict _C_LOOPS = {}
cdef bint C_LOOPS_ON = True
cdef bint DST_REGISTER = True
cdef bint UFUNCS_IN_PASS = True


def set_ufuncs_in_pass(bint on):
    """Run pyet.F of NumPy's own ufuncs in the pass as their C loops (on by
    default; PyFunc._in_pass) or as user functions, hoisted or called on
    each block (a testing knob): nodes built later take it.  Returns the
    previous setting."""
    global UFUNCS_IN_PASS
    before = UFUNCS_IN_PASS
    UFUNCS_IN_PASS = on
    _forget_in_pass()
    return before


cdef void _forget_in_pass() noexcept:
    # the F slots' in_pass answers, asked again (a knob changed them)
    cdef int h
    for h in range(N_FN_SLOTS):
        _FN_SLOTS[h].in_pass = -1


def set_dst_register(bint on):
    """Keep the last NumPy loop's register in dst's block (Run.dst_reg; on by
    default) or in the scratch (a testing knob).  Returns the previous
    setting."""
    global DST_REGISTER
    before = DST_REGISTER
    DST_REGISTER = on
    return before


def set_numpy_c_loops(bint on):
    """Call an op's NumPy loop (ops.NUMPY_LOOPS) straight in C (on) or as its
    ufunc from Python (a testing knob; on by default); trees lowered later take
    it (the program cache is dropped).  Returns the previous setting."""
    global C_LOOPS_ON, _PROGRAMS
    before = C_LOOPS_ON
    C_LOOPS_ON = on
    _PROGRAMS = {}
    _forget_in_pass()
    return before


# _c_loop_index's and _ufunc_in_place's answers for recent (function,
# operand dtypes, result dtype), direct-mapped in C in front of their dicts:
# a tuple key made, hashed and compared in each was ~1.2k instructions of a
# hoisted F's call.  A slot keeps its function alive (_FN_SLOT_REFS), so the
# address it holds names that function alone.
cdef struct fn_slot:
    void *fn
    unsigned long long packed    # result dtype, operand count, operand dtypes
    signed char in_place         # -1: not asked yet
    int loop                     # -2: not asked yet
    signed char result           # pyet.F's result dtype (asked as FN_RESULT); -1: not yet
    signed char in_pass          # F's node runs fn's C loop in the pass (FN_RESULT); -1: not yet
cdef enum:
    N_FN_SLOTS = 64  # (_fn_slot's hash keeps its top 6 bits)
cdef fn_slot _FN_SLOTS[N_FN_SLOTS]
cdef int FN_RESULT = 8  # (the result dtype's question: no dtype code)
cdef list _FN_SLOT_REFS = [None] * N_FN_SLOTS


cdef fn_slot *_fn_slot(object fn, object dts, int dt_out) except? NULL:
    # fn's slot for these dtypes, emptied of another's answers first (NULL:
    # more operands than the packing holds, asked of the dicts alone)
    cdef Py_ssize_t i, n = len(dts)
    if n > 15:
        return NULL
    cdef unsigned long long packed = <unsigned long long>dt_out | (<unsigned long long>n << 4)
    for i in range(n):
        packed |= <unsigned long long>(<int>dts[i]) << (8 + 3 * i)
    cdef int h = <int>((((<uintptr_t><void *>fn) >> 4) ^ packed) * 0x9E3779B97F4A7C15ULL >> 58)
    cdef fn_slot *slot = &_FN_SLOTS[h]
    if slot.fn != <void *>fn or slot.packed != packed:
        _FN_SLOT_REFS[h] = fn
        slot.fn, slot.packed, slot.in_place, slot.loop = <void *>fn, packed, -1, -2
        slot.result = slot.in_pass = -1
    return slot


cdef int _c_loop_index(object fn, object dts, int dt_out) except -2:
    """The index in ufunc fn's loop table of the inner loop NumPy runs for
    these dtypes, when calling it straight gives fn's values (probed once per
    ufunc and dtypes); -1 when there is none (then fn is called)."""
    if not C_LOOPS_ON:
        return -1
    cdef fn_slot *slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL and slot.loop != -2:
        return slot.loop
    key = (fn, tuple(dts), dt_out)
    k = _C_LOOPS.get(key)
    if k is None:
        k = _find_c_loop(fn, dts, dt_out)
        _C_LOOPS[key] = k
    slot = _fn_slot(fn, dts, dt_out)  # (again: the probe may have taken it)
    if slot != NULL:
        slot.loop = k
    return k


cdef int _find_c_loop(object fn, object dts, int dt_out) except -2:
    cdef cnp.ufunc uf
    cdef int k, j, nargs, flags
    cdef char *args[PYET_MAX_IN + 1]
    cdef cnp.npy_intp steps[PYET_MAX_IN + 1]
    cdef cnp.npy_intp dim
    if type(fn) is not np.ufunc or not _ufunc_in_place(fn, dts, dt_out) \
            or len(dts) > PYET_MAX_IN:
        return -1
    uf = <cnp.ufunc>fn
    nargs = uf.nargs
    want = [TYPENUM[<int>d] for d in dts] + [TYPENUM[dt_out]]
    for k in range(uf.ntypes):
        if all(uf.types[k * nargs + j] == want[j] for j in range(nargs)):
            break
    else:
        return -1
    if uf.functions[k] == NULL:
        return -1
    # the probe: ordinary values, edges and specials (both signs), in every
    # operand's position; NumPy's own call must give the same bits.  The
    # flags it raises (in the casts, in NumPy's call) are nobody's
    flags = pyet_fs_get()
    base = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 1e-3,
                     0.999, 1.001, 10.0, 100.0, 1e30, -1e30, 1e-30, 1e-40, np.inf, -np.inf,
                     np.nan, 7.5, -7.5, 0.1, -0.9, 0.9, 40.0, -40.0, 1e5, 123.456, 3.0])
    rng = np.random.default_rng(12345)
    vals = np.concatenate([base, rng.uniform(-4, 4, 300), rng.uniform(0, 1, 300),
                           np.exp(rng.uniform(-80, 80, 300))])
    try:
        with np.errstate(all="ignore"):
            ins = [np.ascontiguousarray(np.roll(vals, 37 * j).astype(DTYPES[<int>dts[j]]))
                   for j in range(len(dts))]
            expect = fn(*ins)
            got = np.empty_like(expect)
            for j in range(len(dts)):
                args[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>ins[j])
                steps[j] = cnp.PyArray_ITEMSIZE(<cnp.ndarray>ins[j])
            args[len(dts)] = <char *>cnp.PyArray_DATA(<cnp.ndarray>got)
            steps[len(dts)] = cnp.PyArray_ITEMSIZE(<cnp.ndarray>got)
            dim = got.shape[0]
            (<np_loop>uf.functions[k])(args, &dim, steps, uf.data[k])
    finally:
        pyet_fs_set(flags)
    if got.dtype != expect.dtype or got.tobytes() != expect.tobytes():
        return -1
    return k


cdef int call_pyfunc(void *prog, void *state, int i, pyet_intp n, void *out,
                     void **inp) noexcept nogil:
    # F(fn, ...) nodes: fn gets read-only arrays of its own (copies of the
    # operand blocks: a reference it keeps never sees scratch memory reused);
    # prog and state are the pass's (Run.prog, Run.state)
    cdef cnp.npy_intp dims[1]
    cdef int dt_out, rc
    # NumPy clears the flags before each ufunc loop and reports its own (fn's
    # errors are NumPy's to report, once): the pass's flags so far are kept
    cdef int flags = pyet_fs_get()
    dims[0] = n
    rc = _call_pyfunc(prog, state, i, n, out, inp, dims)
    if rc == 1:  # a ufunc with its errors ignored: what it raised is the pass's
        pyet_fs_set(flags | pyet_fs_get())
        return 0
    pyet_fs_set(flags)
    return rc


cdef object _operand_block(Program prog, int i, int j, int dt, void *p, cnp.npy_intp *dims):
    # operand j of instruction i as a read-only array of the block's length;
    # a scalar slot holds one value (8 bytes): read with step 0, never as a block
    cdef cnp.npy_intp one = 1
    if prog.code[i].sflags & (1 << j):
        return broadcast_view(cnp.PyArray_SimpleNewFromData(1, &one, TYPENUM[dt], p), (dims[0],))
    view = cnp.PyArray_SimpleNewFromData(1, dims, TYPENUM[dt], p)
    view.flags.writeable = False
    return view


cdef int _call_pyfunc(void *pass_prog, void *state, int i, pyet_intp n, void *out,
                      void **inp, cnp.npy_intp *dims) noexcept nogil:
    cdef int dt_out
    with gil:
        try:
            prog = <Program>pass_prog
            errors, fns, quiet = <tuple>state
            dt_out = prog.code[i].dt_out
            dts = prog.pyfuncs[i][1]
            fn = _pyfunc_at(prog, i, fns)
            if _ufunc_in_place(fn, dts, dt_out):
                # a NumPy ufunc keeps no reference: it reads the blocks where
                # they are and writes its loop's result straight into out; its
                # errors ignored, its flags are reported with the pass's (it
                # cannot raise midway, so the pass may write its destination)
                args = [_operand_block(prog, i, j, <int>dts[j], inp[j], dims)
                        for j in range(len(dts))]
                res = cnp.PyArray_SimpleNewFromData(1, dims, TYPENUM[dt_out], out)
                if quiet:
                    fn(*args, out=res)
                else:
                    with np.errstate(all="ignore"):
                        fn(*args, out=res)
                return 1
            args = []
            for j in range(len(dts)):
                arg = _operand_block(prog, i, j, <int>dts[j], inp[j], dims).copy()
                arg.flags.writeable = False
                args.append(arg)
            res = fn(*args)
            memcpy(out, cnp.PyArray_DATA(_pyfunc_result(fn, res, n, dt_out)),
                   n * pyet_itemsize[dt_out])
            return 0
        except BaseException as exc:
            (<list>errors).append(exc)
            return -1


# (ufunc, dtype code) -> (loop, data) as integers, or None: _direct_loop's answers
cdef dict _DIRECT_LOOPS = {}


cdef object _ufunc_loop(object fn, int nin, int dt, int dt_out):
    # (loop, data) as integers: ufunc fn's loop for nin operands of dtype dt
    # and a result of dt_out, from its loop table; None when it has none
    cdef cnp.ufunc uf
    cdef int k, j, t
    if type(fn) is not np.ufunc or (<object>fn).nin != nin or (<object>fn).nout != 1:
        return None
    uf = <cnp.ufunc>fn
    for k in range(uf.ntypes):
        for j in range(nin + 1):
            t = TYPENUM[dt_out] if j == nin else TYPENUM[dt]
            if uf.types[(nin + 1) * k + j] != t:
                break
        else:
            if uf.functions[k] == NULL:
                return None
            return (<uintptr_t>uf.functions[k], <uintptr_t>uf.data[k])
    return None


cdef object _direct_loop(object fn, int dt):
    """The C loop (and its data) of a unary or binary float ufunc fn for dtype dt
    from the ufunc's loop table, when it gives the ufunc's own bits on a probe
    of values (its domain's edges, specials, odd lengths); None otherwise
    (the ufunc is called on each block then).  A pass calls it on each
    block without the GIL: a ufunc call per block, with its views and
    np.errstate, cost ~3 us (log10 of 64 x 64 float32: 4.1 us, NumPy 1.4)."""
    key = (fn, dt)
    if key in _DIRECT_LOOPS:
        return _DIRECT_LOOPS[key]
    res = None
    if (dt == DT_F32 or dt == DT_F64) and type(fn) is np.ufunc:
        res = _ufunc_loop(fn, (<object>fn).nin, dt, dt)
        if res is not None and not _same_bits(fn, dt, res):
            res = None
    _DIRECT_LOOPS[key] = res
    return res


# ops whose NumPy C loop a one-op pass calls on each row where an operand's
# rows step 3 items or more, 2 for 8-byte operands and results
# (Program.whole_far): NumPy's loops read them in place, where pyet's gathers
# cost 1.2-1.5x NumPy at 4096-32768 elements (a+b float64 step 3, abs,
# maximum; 1.05-1.13x at 2^18); other step-2 gathers vectorize (pyet's float32
# a - b on a[::2] 0.7x NumPy, float64 a < b 0.63x).  Only where the loop gives pyet's
# kernel's bits on a probe (_kernel_bits), so values never depend on the layout.
WHOLE_LOOP_UFUNCS = {OPCODES[name]: getattr(np, name) for name in (
    "add", "subtract", "multiply", "divide", "absolute", "negative", "maximum", "minimum",
    "square", "floor", "ceil", "trunc", "rint", "reciprocal", "positive", "copysign",
    "isnan", "isinf", "isfinite",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "less", "less_equal", "greater",
    "greater_equal", "equal", "not_equal")}
cdef dict _KERNEL_LOOPS = {}
# the layouts (input step, output step, in items) a loop is probed on: the
# strided inputs it is called for, then strided destination rows (NumPy 2.4's
# AVX-512 isnan, isinf, isfinite loops leave bool rows stepping 2 or
# backwards unwritten: such destinations take pyet's blocks)
_READ_LAYOUTS = ((1, 1), (3, 1), (-1, 1))
_WRITE_LAYOUTS = ((1, 2), (1, -1))
# of those, the ones whose NumPy float loops read rows stepping 2 items in SIMD
# (strided loads): such rows take the loop too, where the others keep pyet's
# blocks (float32 a[::2] at 2^18: abs, square, floor, ceil, trunc, rint 1.2-1.3x
# the loop's time, isnan, isinf, isfinite 1.39; negative's loop is scalar there:
# pyet's blocks 0.47x it)
cdef set NEAR_LOOP_OPS = {OPCODES[name] for name in (
    "absolute", "square", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite")}
# Those loops on contiguous rows too, on one thread, where pyet's memory-bound
# loops stay at 256 bits (not Intel: kernels.h pyet_kernel_wide512): on AMD
# Zen 4 NumPy's AVX-512 loops took 0.85-0.93x the time of pyet's blocks (abs,
# ~, maximum, add, float32/float64/int32, 2^18-2^21 elements); same bits (the
# probe above).  Rows shorter than CONTIG_ROW_MIN keep the blocks (a loop call
# per row).
cdef bint CONTIG_LOOPS = not pyet_kernel_wide512()
cdef pyet_intp CONTIG_ROW_MIN = 1024
# a pass moving fewer bytes than this takes such a loop on one thread even
# where threads are allowed (their blocks gained nothing below it here; at 2^21
# float64 elements, 32 MiB, two threads' blocks took 0.72-0.79x the loop's time)
DEF LOOP_THREADS_BYTES = 1 << 24
# except these, whose contiguous blocks beat NumPy's loop (reciprocal: 0.55x
# its time; strided, step 3 and more, its loop wins: float32 step 7 1.26 -> 1.0)
cdef set CONTIG_BLOCKS_OPS = {OPCODES["reciprocal"]}


def set_contiguous_loops(bint on):
    """Let one-op exact passes on contiguous rows run NumPy's C loop (or
    pyet's blocks: tests compare the two); returns the old setting."""
    global CONTIG_LOOPS
    old, CONTIG_LOOPS = CONTIG_LOOPS, on
    return old


cdef tuple _kernel_loop(int op, int dt, int dt_out):
    """(NumPy's C loop for pyet op (WHOLE_LOOP_UFUNCS) from dt to dt_out, or
    None; whether it may write strided destination rows): the loop when it
    gives pyet's kernel's bits on a probe of _READ_LAYOUTS (and of
    _WRITE_LAYOUTS for the second)."""
    key = (op, dt, dt_out)
    if key in _KERNEL_LOOPS:
        return _KERNEL_LOOPS[key]
    res, any_dst = None, False
    fn = WHOLE_LOOP_UFUNCS.get(op)
    if fn is not None and dt != DT_BOOL and HAS_KERNEL[op][dt]:
        res = _ufunc_loop(fn, (<object>fn).nin, dt, dt_out)
        if res is not None and not _kernel_bits(op, dt, dt_out, (<object>fn).nin, res,
                                                _READ_LAYOUTS):
            res = None
        any_dst = res is not None and _kernel_bits(op, dt, dt_out, (<object>fn).nin, res,
                                                   _WRITE_LAYOUTS)
    _KERNEL_LOOPS[key] = (res, any_dst)
    return res, any_dst


cdef bint _kernel_bits(int op, int dt, int dt_out, int nin, tuple loop,
                       tuple layouts) except -1:
    # the loop's results, for each (istep, ostep) of layouts its inputs read
    # every istep items and its output written every ostep, against pyet's
    # kernel's on a probe (floats: specials, signed zeros, NaN; integers:
    # their extremes), bit for bit
    cdef int flags = pyet_fs_get(), j, istep, ostep
    cdef char *args[3]
    cdef void *inp[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    dtype = DTYPES[dt]
    rng = np.random.default_rng(0)
    if dtype.kind == "f":
        big = float(np.finfo(dtype).max)
        mags = np.concatenate([np.geomspace(1e-30, 1e30, 61), rng.random(60) * 10])
        x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0,
                                          -1.0, big, -big]]).astype(dtype)
        pairs = [(x, rng.permutation(x)), (x, x), (x, -x), (x, x[::-1].copy())]
    else:
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(info.min, info.max, 200, dtype=dtype, endpoint=True),
                            np.array([info.min, info.max, 0, -1, 1, info.min + 1], dtype)])
        pairs = [(x, rng.permutation(x)), (x, x), (x, x[::-1].copy())]
    for (istep, ostep), pair in itertools.product(layouts, pairs):
        rows = np.full(x.size * abs(ostep) * pyet_itemsize[dt_out], 0x55, np.uint8).view(
            DTYPES[dt_out])  # (no value a loop writes: an item left unwritten shows)
        got, want = rows[::ostep], np.empty(x.size, DTYPES[dt_out])
        spread = [np.zeros(x.size * abs(istep), dtype)[::istep] for j in range(nin)]
        for j in range(nin):
            spread[j][...] = pair[j]
            args[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>spread[j])
            inp[j] = cnp.PyArray_DATA(<cnp.ndarray>pair[j])
            steps[j] = istep * pyet_itemsize[dt]
        args[nin] = <char *>cnp.PyArray_DATA(<cnp.ndarray>got)
        steps[nin] = ostep * pyet_itemsize[dt_out]
        dims[0] = x.size
        (<np_loop><uintptr_t>loop[0])(args, dims, steps, <void *><uintptr_t>loop[1])
        got = got.copy()
        pyet_kernel(op, dt, 0, x.size, cnp.PyArray_DATA(<cnp.ndarray>want), inp)
        pyet_fs_set(flags)
        if dtype.kind == "f":  # which of two NaNs an op returns is the compiler's
            nan = np.isnan(got)
            if not np.array_equal(nan, np.isnan(want)):
                return False
            got, want = got[~nan], want[~nan]
        if got.tobytes() != want.tobytes():
            return False
    return True


cdef bint _same_bits(object fn, int dt, tuple loop) except -1:
    # the loop's results on a probe, bit for bit, against the ufunc's, on
    # contiguous operands and on steps of 3 and -2
    cdef int flags = pyet_fs_get(), nin = (<object>fn).nin, j
    cdef char *args[3]
    cdef cnp.npy_intp dims[1]
    cdef cnp.npy_intp steps[3]
    cdef cnp.ndarray a
    dtype = DTYPES[dt]
    big = float(np.finfo(dtype).max)
    mags = np.concatenate([np.geomspace(1e-30, 1e30, 97), np.linspace(0, 10, 131)])
    x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5,
                                      -0.5, 0.999, 1.001, 89.0, 710.0, big, -big]]).astype(dtype)
    xs = [x, np.random.default_rng(0).permutation(x)][:nin]
    uint = np.uint32 if dt == DT_F32 else np.uint64
    for step in (1, 3, -2):
        ops = [np.repeat(v, abs(step))[::step] for v in xs] + [np.repeat(x, abs(step))[::step]]
        with np.errstate(all="ignore"):
            want = fn(*ops[:nin])
        for j in range(nin + 1):
            a = <cnp.ndarray>ops[j]
            args[j] = <char *>cnp.PyArray_DATA(a)
            steps[j] = cnp.PyArray_STRIDES(a)[0]
        dims[0] = x.size
        (<np_loop><uintptr_t>loop[0])(args, dims, steps, <void *><uintptr_t>loop[1])
        pyet_fs_set(flags)
        got = ops[nin]
        if want.dtype != got.dtype or not (want.view(uint) == got.view(uint)).all():
            return False
    return True


cdef dict _UFUNC_IN_PLACE = {}


cdef bint _ufunc_in_place(object fn, object dts, int dt_out) except -1:
    # fn a ufunc whose loop for these operand dtypes gives exactly dt_out
    # (once per ufunc and dtypes); other functions get copies of the blocks
    if type(fn) is not np.ufunc:
        return False
    cdef fn_slot *slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL and slot.in_place >= 0:
        return slot.in_place
    key = (fn, tuple(dts), dt_out)
    ok = _UFUNC_IN_PLACE.get(key)
    if ok is None:
        ok = False
        if (<object>fn).nout == 1 and (<object>fn).nin == len(dts):
            try:
                ok = (<object>fn).resolve_dtypes(
                    tuple([DTYPES[<int>d] for d in dts]) + (None,))[len(dts)] == DTYPES[dt_out]
            except Exception:
                ok = False
        if len(_UFUNC_IN_PLACE) >= 256:
            _UFUNC_IN_PLACE.clear()
        _UFUNC_IN_PLACE[key] = ok
    slot = _fn_slot(fn, dts, dt_out)
    if slot != NULL:
        slot.in_place = ok
    return ok


cdef inline object _pyfunc_at(Program prog, int i, list fns):
    # instruction i's function: a user function's slot among the bound ones,
    # or a NumPy ufunc the op itself lowers to (ops.NUMPY_LOOPS)
    fn_or_slot = prog.pyfuncs[i][0]
    return fns[fn_or_slot] if type(fn_or_slot) is int else fn_or_slot


cdef bint ufuncs_only(Program prog, list fns) except -1:
    """Whether every user function of prog is a ufunc run in place (errors
    ignored, flags kept): then the pass cannot raise midway."""
    cdef int i
    for i in range(prog.ninstr):
        if prog.pyfuncs[i] is not None:
            if not _ufunc_in_place(_pyfunc_at(prog, i, fns), prog.pyfuncs[i][1],
                                   prog.code[i].dt_out):
                return False
    return True


cdef object _pyfunc_result(object fn, object res, pyet_intp n, int dt):
    # every block's result: an array of the block's shape and the node's kind
    name = getattr(fn, "__name__", repr(fn))
    if res is None:
        raise TypeError(f"pyet.F: {name} returned None; it must return an array of "
                        f"shape ({n},)")
    res = np.asarray(res)
    if res.shape != (n,):
        raise ValueError(f"pyet.F: {name} returned shape {fmt_shape(res.shape)} for "
                         f"operands of shape ({n},); it must work elementwise")
    if res.dtype.kind != DTYPES[dt].kind and not (
            res.dtype.kind in "iub" and DTYPES[dt].kind in "iu"):
        raise TypeError(f"pyet.F: {name} returned {res.dtype} where {DTYPES[dt]} was "
                        f"expected (pass dtype= to pyet.F to say what it returns)")
    return np.ascontiguousarray(res, dtype=DTYPES[dt])
