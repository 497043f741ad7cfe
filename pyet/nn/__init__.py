"""pyet.nn: MetaNN's layers, policies and composition on pyet's lazy trees.

A layer's ``forward(**inputs)`` returns ``{output port: lazy tree}`` and its
``backward(**grads)`` ``{input port: lazy tree}``, both built from pyet's
expression and gradient rules and computed only when evaluated; an optimizer's
``step(grads)`` registers each parameter's update as fused statements, and
``train_step`` evaluates forward, loss, backward and updates as one EvalPlan::

    import pyet.nn as nn
    model = nn.MLP([64, 128, 10], activation="relu", policy=nn.Policy(update=True))
    opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss = nn.train_step(model, nn.CrossEntropy(), {"input": x, "target": y}, opt)
"""

from pyet.nn._compose import MLP, Compose, SingleLayerPerceptron
from pyet.nn._conv import AvgPool2d, Conv2d, MaxPool2d
from pyet.nn._init import (
    Constant,
    Initializer,
    KaimingNormal,
    Normal,
    Uniform,
    XavierNormal,
    XavierUniform,
)
from pyet.nn._layer import Layer
from pyet.nn._layers import (
    Abs,
    Add,
    Bias,
    CrossEntropy,
    Dot,
    Flatten,
    Interpolate,
    Linear,
    LogSoftmax,
    Multiply,
    NLLLoss,
    ParamSource,
    Permute,
    ReLU,
    Reshape,
    Sigmoid,
    Softmax,
    Sub,
    Tanh,
    ValueSource,
    Weight,
)
from pyet.nn._optim import SGD, Adam, Optimizer, TrainStep, train_step
from pyet.nn._policy import Policy
from pyet.nn._recurrent import GRUStep, Recurrent

__all__ = [
    "MLP", "SGD", "Abs", "Adam", "Add", "AvgPool2d", "Bias", "Compose", "Constant", "Conv2d",
    "CrossEntropy", "Dot", "Flatten", "GRUStep", "Initializer", "Interpolate", "KaimingNormal",
    "Layer", "Linear", "LogSoftmax", "MaxPool2d", "Multiply", "NLLLoss", "Normal", "Optimizer",
    "ParamSource", "Permute", "Policy", "ReLU", "Recurrent", "Reshape", "Sigmoid",
    "SingleLayerPerceptron", "Softmax", "Sub", "Tanh", "TrainStep", "Uniform", "ValueSource",
    "Weight", "XavierNormal", "XavierUniform", "train_step",
]
