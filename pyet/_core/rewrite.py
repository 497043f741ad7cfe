"""Rewrite rules, kept as data: tree patterns lowered to one fused kernel.

A pattern is a nested tuple ``(op, child, ...)``; a string child binds a
subtree: names starting with ``s`` bind only scalars, other names bind any
non-scalar operand.  ``add`` and ``multiply`` match in either argument order
(IEEE addition and multiplication are commutative, exactly).  The fused
kernel computes the same roundings in the same order, so results do not
change.  Rules are tried in order; the first match wins.
"""

RULES = (
    # s1*(x + s2*y): the seed's weight update in one pass
    (("multiply", "s1", ("add", "x", ("multiply", "s2", "y"))),
     "scale_axpy", ("s1", "x", "s2", "y")),
    # s1*x + s2*(y*z): a moving average of a product, written (1-b2)*(g*g)
    # (before axpby, which would take y*z as its y)
    (("add", ("multiply", "s1", "x"), ("multiply", "s2", ("multiply", "y", "z"))),
     "ema_prod", ("s1", "x", "s2", "y", "z")),
    # s1*x + s2*y: a linear combination
    (("add", ("multiply", "s1", "x"), ("multiply", "s2", "y")),
     "axpby", ("s1", "x", "s2", "y")),
    # s1*x + (s2*y)*z: the same written (1-b2)*g*g (Adam's v = b2*v + (1-b2)*g*g)
    (("add", ("multiply", "s1", "x"), ("multiply", ("multiply", "s2", "y"), "z")),
     "ema_mul", ("s1", "x", "s2", "y", "z")),
    # x + s*y: BLAS's axpy
    (("add", "x", ("multiply", "s", "y")), "axpy", ("x", "s", "y")),
    # x - s*y: SGD's step w - lr*g (unfused, float32 at 2^18 took 1.3x NumPy's two passes)
    (("subtract", "x", ("multiply", "s", "y")), "sub_scaled", ("x", "s", "y")),
    # s1*x + s2: a scale and a shift (x*2 + 1, x*scale + bias), one pass over a block, not two
    (("add", ("multiply", "s1", "x"), "s2"), "scale_shift", ("s1", "x", "s2")),
    # x*y + s: a product and a shift (a*b + 1 float64 at 2^18: 1.07-1.14x NumPy's two
    # out= passes, with r0 = x*y in a block register and a second loop over it)
    (("add", ("multiply", "x", "y"), "s"), "mul_shift", ("x", "y", "s")),
    # s*(x + y): a scaled sum
    (("multiply", "s", ("add", "x", "y")), "scale_sum", ("s", "x", "y")),
    # x*y + z*w: two products summed (complex products, lerps, rotations; before
    # muladd, which would take z*w as its z: x*y + y*z - z was three kernels a block)
    (("add", ("multiply", "x", "y"), ("multiply", "z", "w")), "mul_add_mul",
     ("x", "y", "z", "w")),
    # x*y - z*w: their difference (a complex product's real part, a cross product)
    (("subtract", ("multiply", "x", "y"), ("multiply", "z", "w")), "mul_sub_mul",
     ("x", "y", "z", "w")),
    # x*y + z: multiply-add (two roundings, never an FMA)
    (("add", ("multiply", "x", "y"), "z"), "muladd", ("x", "y", "z")),
    # x*y - z
    (("subtract", ("multiply", "x", "y"), "z"), "mulsub", ("x", "y", "z")),
    # z - x*y
    (("subtract", "z", ("multiply", "x", "y")), "submul", ("x", "y", "z")),
    # s1/(s2 + exp(-x)): the logistic sigmoid 1/(1+exp(-x)) in one pass, not four
    (("divide", "s1", ("add", "s2", ("exp", ("negative", "x")))), "logistic", ("s1", "s2", "x")),
    # (s*x)*y: a scaled product (c*g*g, Adam's and RMSprop's squared gradient)
    (("multiply", ("multiply", "s", "x"), "y"), "scale_mul", ("s", "x", "y")),
    # s1*(x/s2): a scaled quotient (lr * m/bc1, Adam's bias-corrected step)
    (("multiply", "s1", ("divide", "x", "s2")), "scale_div", ("s1", "x", "s2")),
    # z - x/(sqrt(y/s1) + s2): the update below over a bias-corrected y (Adam's v/bc2)
    (("subtract", "z", ("divide", "x", ("add", ("sqrt", ("divide", "y", "s1")), "s2"))),
     "sub_div_sqrt_div", ("z", "x", "y", "s1", "s2")),
    # x/(sqrt(y/s1) + s2): that step alone
    (("divide", "x", ("add", ("sqrt", ("divide", "y", "s1")), "s2")), "div_sqrt_div",
     ("x", "y", "s1", "s2")),
    # z - x/(sqrt(y) + s): the adaptive optimizers' update (Adam, RMSprop, Adagrad)
    (("subtract", "z", ("divide", "x", ("add", ("sqrt", "y"), "s"))), "sub_div_sqrt",
     ("z", "x", "y", "s")),
    # x/(sqrt(y) + s): their step
    (("divide", "x", ("add", ("sqrt", "y"), "s")), "div_sqrt", ("x", "y", "s")),
)

COMMUTATIVE = frozenset({"add", "multiply"})

# Rules over a multi-output pass's program (the rules above lowered): a run of
# instructions that is an optimizer step becomes one kernel writing every
# destination, each value kept in registers, as PyTorch's fused Adam (the
# kernels one after another over a block stall on memory: 1.4x a C loop at
# 1e7).  The kernel computes the same roundings in the same order.  An
# instruction is (op, output, operands...): an output "D*" is a destination
# of the pass, "R*" a register read only inside the run; an operand names
# what it binds ("s*" a scalar; other names any array the run does not
# write, the same one wherever the name recurs); add and multiply match either
# way round.  Rows: (instructions, fused op, its operands in order); the
# destinations in its operands are written too, the last output is its own.
PASS_RULES = (
    # Adam over bias-corrected moments: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
    # w -= lr*(m/bc1) / (sqrt(v/bc2) + eps)
    ((("axpby", "Dm", "s1", "m", "s2", "g"),
      ("ema_mul", "Dv", "s3", "v", "s4", "g", "g"),
      ("scale_div", "R1", "s5", "Dm", "s6"),
      ("sub_div_sqrt_div", "Dw", "w", "R1", "Dv", "s7", "s8")),
     "adam", ("m", "g", "v", "w", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "Dm", "Dv")),
    # PyTorch's form (pyet.nn.Adam): v = b2*v + (1-b2)*(g*g);
    # w -= (lr/bc1)*m / (sqrt(v)*(1/sqrt(bc2)) + eps)
    ((("axpby", "Dm", "s1", "m", "s2", "g"),
      ("ema_prod", "Dv", "s3", "v", "s4", "g", "g"),
      ("multiply", "R1", "s5", "Dm"),
      ("sqrt", "R2", "Dv"),
      ("scale_shift", "R4", "s6", "R2", "s7"),
      ("divide", "R5", "R1", "R4"),
      ("subtract", "Dw", "w", "R5")),
     "adam_torch", ("m", "g", "v", "w", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "Dm", "Dv")),
)

# Passes fused into a product's stores (gemm.h's epilogues): in a kept plan, a
# pass right after a product computed on the register tiles, whose program is
# one of these, is computed by the tiles as they store the product's C, while
# it sits in registers (the same roundings in the same order).  Operands: "C"
# the product's C, "b" a row vector broadcast down C's rows, "z" a matrix of
# C's shape, "s*" scalars; "D" the pass's destination, "R*" registers; add
# matches either way round.  Rows: (instructions, epilogue).
GEMM_EPILOGUES = (
    # relu(C + b): a layer's bias and activation
    ((("add", "R1", "C", "b"), ("relu", "D", "R1")), "bias_relu"),
    # where(z + b > s0, C, s1): relu's gradient, z the layer's product
    ((("add", "R1", "z", "b"), ("greater", "R2", "R1", "s0"), ("where", "D", "R2", "C", "s1")),
     "bias_mask"),
    # where(z > s0, C, s1): relu's gradient, z the layer's output
    ((("greater", "R1", "z", "s0"), ("where", "D", "R1", "C", "s1")), "mask"),
)

# Root forms, MShadow's DotExp engine: a tree of these shapes, with every node
# of the destination's float dtype, is written as ONE gemm straight into the
# destination, dst := alpha * A @ B + beta * dst.  Slots: "P" a product node
# dot(A, B), "a" a nonzero scalar (alpha), "D" a tree with no special node
# (written into dst first; beta 1 adds the product to it, beta -1 subtracts
# it).  Rows: (pattern, sign of alpha, beta); add and multiply match either
# way round.
ROOT_FORMS = (
    ("P", 1.0, 0.0),                                          # dot(A, B)
    (("multiply", "a", "P"), 1.0, 0.0),                       # a * dot(A, B)
    (("negative", "P"), -1.0, 0.0),                           # -dot(A, B)
    (("negative", ("multiply", "a", "P")), -1.0, 0.0),        # -(a * dot(A, B))
    (("add", "D", "P"), 1.0, 1.0),                            # D + dot(A, B)
    (("add", "D", ("multiply", "a", "P")), 1.0, 1.0),         # D + a * dot(A, B)
    (("subtract", "D", "P"), -1.0, 1.0),                      # D - dot(A, B)
    (("subtract", "D", ("multiply", "a", "P")), -1.0, 1.0),   # D - a * dot(A, B)
    (("subtract", "P", "D"), 1.0, -1.0),                      # dot(A, B) - D
    (("subtract", ("multiply", "a", "P"), "D"), 1.0, -1.0),   # a * dot(A, B) - D
)

# Folds applied when a node is built.  Each gives the unfolded node's value for
# every input (NaN, inf and -0.0 included) and applies only where the node has
# its operand's dtype and shape; folds that hold only for finite inputs
# (x * 0 -> 0, x - x -> 0) are not here.
# Rows: (op, operand position of the neutral scalar: 1 right, 2 either side, its value)
NEUTRAL_FOLDS = (
    ("multiply", 2, 1),   # x * 1 -> x (1 * x too): x*1 rounds to x, -0.0 and NaN kept
    ("divide", 1, 1),     # x / 1 -> x
    ("subtract", 1, 0),   # x - 0 -> x (-0.0 - 0 is -0.0; x + 0 is not a fold: -0.0 + 0 = 0.0)
)
INVOLUTIONS = ("negative", "invert")  # -(-x) -> x, ~~x -> x (integers wrap back)
# Ops whose answer on integers and bools is one value whatever the values
# (NumPy's too): the node is that constant, broadcast, and reads nothing.
# Rows: (op, its value)
INTEGER_CONSTANTS = (
    ("isnan", False),     # no integer is NaN
    ("isinf", False),     # nor infinite
    ("isfinite", True),   # so every one is finite
)

# Folds of an op over a special node, applied when the node is built.  The
# result is the same function of the input, computed by a better kernel: it
# rounds differently (within a few ulp) and never worse.
# Rows: (op, the child's kernel name, the kernel name the node becomes)
SPECIAL_FOLDS = (
    # log(softmax(x)) -> log_softmax(x): one pass, and finite where softmax underflows to 0
    ("log", "softmax", "log_softmax"),
)

# Folds that hold only for finite inputs, applied to nodes built inside
# ``with pyet.fast_math():`` and never otherwise.  A pattern is (op, child,
# ...): "x" binds an operand (twice: the same value, i.e. the same node or
# the same structure over the same memory), a number matches a scalar or
# constant of that value, multiply matches either way round.  A result is
# "x" (applied only where x has the node's dtype and shape) or a number (a
# constant of the node's dtype and shape).  Rows: (pattern, result).
FAST_MATH_FOLDS = (
    (("multiply", "x", 0), 0),         # x * 0 -> 0 (inf*0 and nan*0 are nan; -1*0 is -0.0)
    (("subtract", "x", "x"), 0),       # x - x -> 0 (inf - inf and nan - nan are nan)
    (("log", ("exp", "x")), "x"),      # log(exp(x)) -> x (exp overflows to inf above ~709)
    (("exp", ("log", "x")), "x"),      # exp(log(x)) -> x for x >= 0 (log(-1) is nan)
)

# Elementwise ops that cost several times a memory pass per element: a plan
# computes a subtree holding one of them once into scratch when it is read
# more than once (s = sigmoid(z) read by the loss and by its gradient s*(1-s));
# a subtree of cheap ops (add, multiply, compare...) is recomputed where it is
# read, which costs less than writing and reading it back.  Each with its
# kernel's time per element beyond an add's, float32 and float64, in ns (one
# thread, 2^16 elements in cache, AMD Zen 4): a subtree smaller than its pass
# is computed once when the time it saves pays for its own pass (HOIST_SAVED_NS).
ELEMENT_NS = {
    "exp": (0.13, 0.46), "exp2": (0.10, 0.45), "expm1": (0.24, 0.90),
    "log": (0.24, 0.54), "log2": (0.13, 0.60), "log10": (0.10, 0.61),
    "log1p": (0.31, 0.77), "sqrt": (0.06, 0.31), "cbrt": (0.19, 0.74),
    "sin": (0.40, 1.68), "cos": (0.41, 1.68), "tan": (0.28, 1.09),
    "arcsin": (0.26, 1.02), "arccos": (0.29, 1.11), "arctan": (0.28, 0.98),
    "sinh": (0.25, 0.92), "cosh": (0.22, 0.64), "tanh": (0.19, 1.01),
    "arcsinh": (0.57, 1.83), "arccosh": (0.53, 1.93), "arctanh": (0.38, 1.33),
    "sigmoid": (0.20, 0.60), "erf": (2.74, 2.40), "power": (0.56, 1.98),
    "divide": (0.01, 0.10), "arctan2": (0.51, 1.94), "hypot": (2.37, 13.40),
    "logaddexp": (3.35, 2.89), "logaddexp2": (3.68, 3.22),
    "floor_divide": (1.55, 1.64), "remainder": (1.29, 1.09), "fmod": (1.21, 0.75),
}
INT_ELEMENT_NS = 0.2  # integer power, floor_divide, remainder, fmod: 0.12-0.5 ns
PYFUNC_ELEMENT_NS = 1.0  # a user function: NumPy's float64 math runs ~0.5-3 ns
COSTLY_OPS = frozenset(ELEMENT_NS)

# Kernels (ops and fused patterns) that are compute-bound over a block in the
# caches: a pass prefetches its next blocks before these, while the memory
# would otherwise sit idle (the cheap ones stream memory themselves).
COMPUTE_BOUND = COSTLY_OPS | {"logistic", "scale_div", "div_sqrt", "sub_div_sqrt",
                              "div_sqrt_div", "sub_div_sqrt_div"}
