"""What value does a whole answer state? The rule every correctness reward judges by.

    answer_values("$1,234.50")   -> (Fraction(2469, 2),)
    answer_values("18 or 20")    -> ()               two numbers: not an answer
    numeral_values("14+9")       -> ()               an expression: not the number written out
    same_answer("1/2", "0.5")    -> True
    same_answer("14+9", "23")    -> False            the gold is a number: so must the answer be

An answer is right when ALL of it states ONE value, equal to the gold one. One value is either
  - one number as people write it, with words or a unit around it and no other number: '72', '-3.5',
    '1,234', '$72.00', '72 dollars', 'x = 72', '1.5e3', '50%'; or
  - one expression math-verify reads, with no words: '1/2', '\\frac{3}{4}', '12/4', '2^{10}', '\\sqrt{2}'.
Everything else is no answer, however right its last number: two numbers with words or punctuation
between ('18 or 20', '10:30', '3, 4', '2 1/2'), and any equation or inequality between numbers
('12/4 = 3', '3 < 4'): the question asks for a value, and a policy paid for the last number of a list
learns to list. `x = 72` counts: it holds one number.

A numeral is the first kind, or a plain fraction in lowest terms ('1/2', '-\\frac{3}{4}'): the number written
out, with no arithmetic left to do. Against a gold written as a numeral, same_answer takes a numeral only: an
expression equal to it ('14+9' for "What is 14 plus 9?", '12/4' for 3) copies the question's arithmetic instead
of doing it, and a policy paid for it learns to copy (issue 43). Against a gold that is itself an expression
('\\sqrt{8}'), any expression of its value is right.

Percent: 'p%' (or 'p percent') is right for a gold of p/100, its value (a probability of 0.5), and for a
gold of p, because a "what percent ...?" question records the count of percent as its gold (GSM8K writes
'#### 50' for 50%). Either way the digits must be the gold's; a plain '0.5' for a gold of 50 is wrong.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from fractions import Fraction

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+]?)\$?"  # a sign touching the digits ('-7', '-$7'; not 'x - 7'), not glued to a word ('x2')
    r"(?P<digits>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?P<exponent>[eE][-+]?\d+)?"
    r"(?P<percent>\s*(?:%|\bper\s?cent\b))?",
    re.IGNORECASE,
)
# Beside a single number, these would make it part of arithmetic ('3/4', '2^3', '3 < 4', '\frac'), not a unit.
_OPERATORS = re.compile(r"[\d+\-*/^\\{}<>%\[\]|~\u00b1\u00d7\u00f7\u221a\u2260\u2264\u2265\u2248\u00b7]")
_IN_WORD = re.compile(r"(?<=[^\W\d_])[-/](?=[^\W\d_])")  # 'year-old' and 'km/h' are words; '- 3', '/ 4' arithmetic
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_WRAPPERS = (re.compile(r"^\$+([^$]+?)\$+$"), re.compile(r"^\\\((.*)\\\)$", re.S), re.compile(r"^\\\[(.*)\\\]$", re.S),
             re.compile(r"^\*\*(.*)\*\*$", re.S))
# An expression: digits and operators, with only these LaTeX commands (no words, no relations, no lists).
_MATH_COMMANDS = re.compile(r"\\(?:d|t)?frac|\\sqrt|\\cdot|\\times|\\div|\\pi|\\left|\\right")
_MATH_ONLY = re.compile(r"[\d\s.+\-*/^(){}]+")
# '3 4', '2(3)' and '1.2.3' are not one number (math-verify would read them as 7, 5 and 0.36)
_JUXTAPOSED = re.compile(r"[\d.]\s+[\d.]|\d\s*\(|\)\s*\d|\.\d+\.")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_FRACTION = re.compile(r"(?P<sign>-?)\s*(?:(?P<a>\d+)\s*/\s*(?P<b>\d+)"  # '-3/4'
                       r"|\\[dt]?frac\s*\{\s*(?P<c>\d+)\s*\}\s*\{\s*(?P<d>\d+)\s*\})")  # '\frac{3}{4}'
_LARGEST = 10**100  # no answer is larger; float() of every value stays finite
_LONGEST = 120  # digits, or characters of an expression: past any answer (and int() refuses 4,300 digits)


def answer_values(text: str | None) -> tuple[Fraction, ...]:
    """The value the whole `text` states: one Fraction, or two for a percentage (p/100, then p); () when
    the text is not one value (no number, two numbers, an equation, an expression with words)."""
    if not text:
        return ()
    cleaned = _cleaned(text)
    plain = _one_number(cleaned)
    return plain if plain is not None else _one_expression(cleaned)


def numeral_values(text: str | None) -> tuple[Fraction, ...]:
    """The value the whole `text` states when it is one number written out (a numeral: '23', '$1,200', '18.0',
    '72 dollars', '50%', '1/2', '-\\frac{3}{4}'); () for an expression ('14+9', '12/4', '2^{3}') as for anything
    that is not one value."""
    if not text:
        return ()
    cleaned = _cleaned(text)
    plain = _one_number(cleaned)
    return plain if plain is not None else _plain_fraction(cleaned)


def same_answer(given: str | None, gold) -> bool:
    """The whole `given` answer states the gold value: numbers compare by value ('1/2' == '0.5', '1,000' ==
    '1000.0'), and a gold written as a number takes a number written out, not an expression of it ('14+9' is not
    23); a gold that is not one value ('Paris') compares as text, ignoring case and outer spaces."""
    if given is None:
        return False
    expected = answer_values(str(gold))
    if not expected:
        return given.strip().lower() == str(gold).strip().lower()
    stated = numeral_values(given) if numeral_values(str(gold)) else answer_values(given)
    return any(same_value(a, b) for a in stated for b in expected)


def same_value(a: Fraction, b: Fraction, rel_tol: float = 1e-12, abs_tol: float = 0.0) -> bool:
    """Exact for numbers written exactly; `rel_tol` absorbs the last digits of an irrational ('\\sqrt{2}')."""
    return a == b or math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def math_verify_timeout() -> int | None:
    """math-verify's time limit in seconds: a SIGALRM, which only the main thread may set; elsewhere none."""
    return 5 if threading.current_thread() is threading.main_thread() else None


def _cleaned(text: str) -> str:
    return _unwrap(_LATEX_TEXT.sub(r" \1 ", text.replace("\u2212", "-").replace("\\$", "$").replace("\\%", "%")))


def _unwrap(text: str) -> str:
    """'$\\frac{1}{2}$', '\\(...\\)', '**72**', '\\boxed{72}' and a closing full stop around the whole answer."""
    previous = None
    while text != previous:
        previous, text = text, text.strip().rstrip(".").strip()
        for wrapper in _WRAPPERS:
            text = wrapper.sub(r"\1", text)
        if text.startswith("\\boxed{") and text.endswith("}") and _closes_at_end(text, len("\\boxed")):
            text = text[len("\\boxed{") : -1]
    return text


def _closes_at_end(text: str, opening: int) -> bool:
    depth = 0
    for index in range(opening, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index == len(text) - 1
    return False


def _one_number(text: str) -> tuple[Fraction, ...] | None:
    """The value of a text holding exactly one number and otherwise only words; None when it is not that, () when
    the number is past any answer ('1e999999999', five thousand digits)."""
    numbers = list(_NUMBER.finditer(text))
    if len(numbers) != 1:
        return None
    found = numbers[0]
    after = re.sub(r"^-(?=[^\W\d_])", "", text[found.end() :])  # '72-year-old': a number with a word
    around = _IN_WORD.sub("", text[: found.start()] + " " + after)
    if _OPERATORS.search(around):
        return None
    digits, exponent = found["digits"].replace(",", ""), found["exponent"] or "e0"
    if len(digits) > _LONGEST or len(exponent) > 5:  # checked before int() and 10 ** exponent are computed
        return ()
    value = Fraction(digits) * Fraction(10) ** int(exponent[1:])
    if abs(value) > _LARGEST:
        return ()
    value = -value if found["sign"] == "-" else value
    return (value / 100, value) if found["percent"] else (value,)


def _plain_fraction(text: str) -> tuple[Fraction, ...]:
    """'1/2', '-\\frac{3}{4}': a fraction in lowest terms; '12/4', '2/4' and '4/1' are divisions still to do."""
    found = _FRACTION.fullmatch(text)
    if found is None:
        return ()
    numerator, denominator = found["a"] or found["c"], found["b"] or found["d"]
    if len(numerator) + len(denominator) > _LONGEST:
        return ()
    numerator, denominator = int(numerator), int(denominator)
    if denominator < 2 or math.gcd(numerator, denominator) != 1:
        return ()
    value = Fraction(numerator, denominator)
    return (-value if found["sign"] else value,)


def _one_expression(text: str) -> tuple[Fraction, ...]:
    """The value of a numeric expression with no words ('12/4', '\\frac{3}{4}'), read by math-verify."""
    text = _THOUSANDS.sub("", text)
    percent = text.endswith("%")
    body = text.removesuffix("%").strip()
    if not body or len(body) > _LONGEST:  # math-verify takes seconds on ten thousand brackets
        return ()
    if not _MATH_ONLY.fullmatch(_MATH_COMMANDS.sub(" ", body)) or _JUXTAPOSED.search(body):
        return ()
    value = _evaluate(body)
    if value is None:
        return ()
    return (value / 100, value) if percent else (value,)


@functools.lru_cache(maxsize=4096)  # a GRPO group repeats its answers; math-verify takes milliseconds each
def _evaluate(latex: str) -> Fraction | None:
    """math-verify's reading of `latex` as one real number, exact when rational; None for anything else."""
    import sympy
    from math_verify import LatexExtractionConfig, parse
    from math_verify.errors import TimeoutException
    from math_verify.utils import timeout

    limit = math_verify_timeout()
    try:
        parsed = parse(f"${latex}$", extraction_config=[LatexExtractionConfig()], parsing_timeout=limit)
        expr = parsed[0] if parsed else None
        if not isinstance(expr, sympy.Expr) or not expr.is_number or _has_tower(expr, sympy.Pow):
            return None
        return timeout(limit)(_real_value)(expr)  # sympy has no time limit of its own
    except (Exception, TimeoutException):  # malformed LaTeX, or slower than the limit: not one value
        return None


def _real_value(expr) -> Fraction | None:
    import sympy

    expr = sympy.nsimplify(expr, rational=True)  # the decimals as written: 0.1 + 0.2 is 3/10 exactly
    approximate = expr.evalf(30)
    if not (approximate.is_real and approximate.is_finite) or abs(approximate) > _LARGEST:
        return None
    exact = expr.doit() if expr.is_rational else None  # '12/4' -> 3 exactly; '\\sqrt{2}' to 30 digits
    if isinstance(exact, sympy.Rational):
        return Fraction(int(exact.p), int(exact.q))
    return Fraction(str(approximate))


def _has_tower(expr, power) -> bool:
    """A power whose exponent holds a power or is over 100 ('2^{2^{10}}'): too big to evaluate, never an answer."""
    for node in expr.atoms(power):
        exponent = node.exp
        if exponent.atoms(power) or not exponent.is_number or abs(exponent.evalf(5)) > 100:
            return True
    return False
