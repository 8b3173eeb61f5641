"""The AMPS content filter language (docs/protocol.md, Filters): lexer, Pratt parser, frozen AST,
and a compiler that turns the AST into a closure once per distinct filter text."""

from .compiler import Filter, compile_filter
from .orderby import OrderBy, parse_orderby

__all__ = ["Filter", "OrderBy", "compile_filter", "parse_orderby"]
