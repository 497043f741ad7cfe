"""The core: node types and dtype/shape rules (expr), lowering and the
block engine (plan), special-node evaluation (special), the op table and
rewrite rules."""
