"""DEV: twenty-four small Python functions, each with two or three subtly wrong versions that
compile and lint clean (off-by-one, a missed case, the wrong tie order) and the right one last.

Eight of them are tasks of ``dev_core`` (the end-to-end case's ten), whose candidates carry
their own tests, as DEV agents write them, so cross-execution has something to run: the four
that were already here keep one case each (``merged``: the ten-task candidates, this module's
other wrong version, both tasks' acceptance tests), the four others gain a second wrong version
here. Its ``factorial`` and ``chunks`` are left out: this module's cases of those tasks ask
for more (a ValueError for a negative n; the name ``chunk``), so they would be the same task
twice with two specs.
"""

from __future__ import annotations

from bench.selection.corpus import SelectionCase, python_answer, python_case
from bench.selection.corpus.dev_core import TASKS, DevTask


def _case(task_id: str, task: str, wrongs: list[str], right: str, tests: str) -> SelectionCase:
    return python_case("DEV", task_id, task, wrongs, right, tests)


_OWN = [
    _case(
        "leap-year",
        "Write is_leap_year(year) for the Gregorian calendar.",
        [
            "def is_leap_year(year):\n    return year % 4 == 0",
            "def is_leap_year(year):\n    return year % 4 == 0 and year % 100 != 0",
        ],
        "def is_leap_year(year):\n"
        "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        """
from solution import is_leap_year
def test_leap():
    assert is_leap_year(2024) and is_leap_year(2000)
    assert not is_leap_year(1900) and not is_leap_year(2023)
""",
    ),
    _case(
        "is-prime",
        "Write is_prime(n) for integers n (n < 2 is not prime).",
        [
            "def is_prime(n):\n    if n < 2:\n        return False\n"
            "    for d in range(2, int(n ** 0.5)):\n        if n % d == 0:\n"
            "            return False\n    return True",
            "def is_prime(n):\n    for d in range(2, int(n ** 0.5) + 1):\n"
            "        if n % d == 0:\n            return False\n    return True",
        ],
        "def is_prime(n):\n    if n < 2:\n        return False\n"
        "    for d in range(2, int(n ** 0.5) + 1):\n        if n % d == 0:\n"
        "            return False\n    return True",
        """
from solution import is_prime
def test_primes():
    assert [n for n in range(30) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
""",
    ),
    _case(
        "roman-to-int",
        "Write roman_to_int(s) converting a Roman numeral (I..MMMCMXCIX) to an int.",
        [
            "VALUES = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n\n"
            "def roman_to_int(s):\n    return sum(VALUES[c] for c in s)",
            "VALUES = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n\n"
            "def roman_to_int(s):\n    total = 0\n    for i, c in enumerate(s):\n"
            "        if c == 'I' and i + 1 < len(s) and s[i + 1] in 'VX':\n"
            "            total -= 1\n        else:\n            total += VALUES[c]\n"
            "    return total",
        ],
        "VALUES = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n\n"
        "def roman_to_int(s):\n    total = 0\n    for i, c in enumerate(s):\n"
        "        if i + 1 < len(s) and VALUES[c] < VALUES[s[i + 1]]:\n"
        "            total -= VALUES[c]\n        else:\n            total += VALUES[c]\n"
        "    return total",
        """
from solution import roman_to_int
def test_roman():
    assert roman_to_int("III") == 3 and roman_to_int("IX") == 9
    assert roman_to_int("MCMXCIV") == 1994 and roman_to_int("XL") == 40
""",
    ),
    _case(
        "palindrome",
        "Write is_palindrome(s): True when s reads the same backwards, ignoring case and any "
        "character that is not a letter or digit.",
        [
            "def is_palindrome(s):\n    kept = [c for c in s if c.isalnum()]\n"
            "    return kept == kept[::-1]",
            "def is_palindrome(s):\n    s = s.lower()\n    return s == s[::-1]",
        ],
        "def is_palindrome(s):\n    kept = [c.lower() for c in s if c.isalnum()]\n"
        "    return kept == kept[::-1]",
        """
from solution import is_palindrome
def test_palindrome():
    assert is_palindrome("A man, a plan, a canal: Panama")
    assert is_palindrome("Racecar") and not is_palindrome("race a car")
""",
    ),
    _case(
        "flatten",
        "Write flatten(nested) that flattens lists nested to any depth into one list, in order.",
        [
            "def flatten(nested):\n    out = []\n    for x in nested:\n"
            "        if isinstance(x, list):\n            out.extend(x)\n        else:\n"
            "            out.append(x)\n    return out",
            "def flatten(nested):\n    out = []\n    for x in nested:\n"
            "        if isinstance(x, list):\n            for y in x:\n"
            "                out.extend(y if isinstance(y, list) else [y])\n"
            "        else:\n            out.append(x)\n    return out",
        ],
        "def flatten(nested):\n    out = []\n    for x in nested:\n"
        "        if isinstance(x, list):\n            out.extend(flatten(x))\n        else:\n"
        "            out.append(x)\n    return out",
        """
from solution import flatten
def test_flatten():
    assert flatten([1, [2, [3, [4, [5]]]], 6]) == [1, 2, 3, 4, 5, 6]
    assert flatten([[], [[]], "ab"]) == ["ab"]
""",
    ),
    _case(
        "run-length",
        "Write rle(s) that run-length encodes a string: 'aaabcc' -> '3a1b2c'.",
        [
            "def rle(s):\n    out = ''\n    count = 1\n    for i in range(1, len(s)):\n"
            "        if s[i] == s[i - 1]:\n            count += 1\n        else:\n"
            "            out += f'{count}{s[i - 1]}'\n            count = 1\n    return out",
            "from collections import Counter\n\n"
            "def rle(s):\n    return ''.join(f'{n}{c}' for c, n in Counter(s).items())",
        ],
        "from itertools import groupby\n\n"
        "def rle(s):\n    return ''.join(f'{len(list(g))}{c}' for c, g in groupby(s))",
        """
from solution import rle
def test_rle():
    assert rle("aaabcc") == "3a1b2c"
    assert rle("aabaa") == "2a1b2a"
    assert rle("") == ""
""",
    ),
    _case(
        "merge-intervals",
        "Write merge(intervals): merge overlapping or touching [start, end] intervals, "
        "returned sorted by start.",
        [
            "def merge(intervals):\n    out = []\n    for s, e in intervals:\n"
            "        if out and s <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], e)\n"
            "        else:\n            out.append([s, e])\n    return out",
            "def merge(intervals):\n    out = []\n    for s, e in sorted(intervals):\n"
            "        if out and s < out[-1][1]:\n            out[-1][1] = max(out[-1][1], e)\n"
            "        else:\n            out.append([s, e])\n    return out",
        ],
        "def merge(intervals):\n    out = []\n    for s, e in sorted(intervals):\n"
        "        if out and s <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], e)\n"
        "        else:\n            out.append([s, e])\n    return out",
        """
from solution import merge
def test_merge():
    assert merge([[8, 10], [1, 3], [2, 6]]) == [[1, 6], [8, 10]]
    assert merge([[1, 2], [2, 3]]) == [[1, 3]]
""",
    ),
    _case(
        "two-sum",
        "Write two_sum(nums, target): the indices (i, j), i < j, of two different elements "
        "that add up to target, or None.",
        [
            "def two_sum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
            "        seen[x] = i\n        if target - x in seen:\n"
            "            return (seen[target - x], i)\n    return None",
            "def two_sum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
            "        if target - x in seen:\n            return (target - x, x)\n"
            "        seen[x] = i\n    return None",
        ],
        "def two_sum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
        "        if target - x in seen:\n            return (seen[target - x], i)\n"
        "        seen[x] = i\n    return None",
        """
from solution import two_sum
def test_two_sum():
    assert two_sum([2, 7, 11, 15], 9) == (0, 1)
    assert two_sum([3, 2, 4], 6) == (1, 2)
    assert two_sum([3], 6) is None
""",
    ),
    _case(
        "balanced",
        "Write balanced(s): True when every bracket among ()[]{} in s is closed in order.",
        [
            "def balanced(s):\n    return all(s.count(o) == s.count(c) for o, c in "
            "('()', '[]', '{}'))",
            "def balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n"
            "    for c in s:\n        if c in '([{':\n            stack.append(c)\n"
            "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
            "                return False\n    return True",
        ],
        "def balanced(s):\n    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n"
        "    for c in s:\n        if c in '([{':\n            stack.append(c)\n"
        "        elif c in pairs:\n            if not stack or stack.pop() != pairs[c]:\n"
        "                return False\n    return not stack",
        """
from solution import balanced
def test_balanced():
    assert balanced("{[()()]}") and balanced("a(b)c")
    assert not balanced("([)]") and not balanced("((")
""",
    ),
    _case(
        "chunk",
        "Write chunk(items, n): consecutive lists of n items; the last may be shorter.",
        [
            "def chunk(items, n):\n"
            "    return [items[i:i + n] for i in range(0, len(items) - n + 1, n)]",
            "def chunk(items, n):\n"
            "    return [items[i:i + n] for i in range(0, len(items), n - 1)]",
        ],
        "def chunk(items, n):\n    return [items[i:i + n] for i in range(0, len(items), n)]",
        """
from solution import chunk
def test_chunk():
    assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert chunk([1, 2, 3], 3) == [[1, 2, 3]]
""",
    ),
    _case(
        "rotate",
        "Write rotate(items, k): the list rotated right by k places (k may exceed its length).",
        [
            "def rotate(items, k):\n    if not items:\n        return []\n    k %= len(items)\n"
            "    return items[k:] + items[:k]",
            "def rotate(items, k):\n    if not items:\n        return []\n"
            "    return items[-k:] + items[:-k]",
        ],
        "def rotate(items, k):\n    if not items:\n        return []\n    k %= len(items)\n"
        "    return items[len(items) - k:] + items[:len(items) - k]",
        """
from solution import rotate
def test_rotate():
    assert rotate([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]
    assert rotate([1, 2, 3], 4) == [3, 1, 2]
    assert rotate([1, 2], 0) == [1, 2]
""",
    ),
    _case(
        "top-words",
        "Write top_words(text, k): the k most frequent words (case-insensitive), most frequent "
        "first, ties in alphabetical order.",
        [
            "from collections import Counter\n\ndef top_words(text, k):\n"
            "    return [w for w, _ in Counter(text.lower().split()).most_common(k)]",
            "from collections import Counter\n\ndef top_words(text, k):\n"
            "    counts = Counter(text.split())\n"
            "    return sorted(counts, key=lambda w: (-counts[w], w))[:k]",
        ],
        "from collections import Counter\n\ndef top_words(text, k):\n"
        "    counts = Counter(text.lower().split())\n"
        "    return sorted(counts, key=lambda w: (-counts[w], w))[:k]",
        """
from solution import top_words
def test_top_words():
    assert top_words("b a c b a The the THE", 3) == ["the", "a", "b"]
""",
    ),
    _case(
        "second-largest",
        "Write second_largest(nums): the second largest distinct value, or None.",
        [
            "def second_largest(nums):\n    if len(nums) < 2:\n        return None\n"
            "    return sorted(nums)[-2]",
            "def second_largest(nums):\n    first = second = 0\n    for x in nums:\n"
            "        if x > first:\n            first, second = x, first\n"
            "        elif first > x > second:\n            second = x\n"
            "    return second if second != first else None",
        ],
        "def second_largest(nums):\n    distinct = sorted(set(nums))\n"
        "    return distinct[-2] if len(distinct) >= 2 else None",
        """
from solution import second_largest
def test_second_largest():
    assert second_largest([3, 5, 5, 1]) == 3
    assert second_largest([-4, -2, -9]) == -4
    assert second_largest([7, 7]) is None
""",
    ),
    _case(
        "factorial",
        "Write factorial(n) for n >= 0; raise ValueError for negative n.",
        [
            "def factorial(n):\n    if n < 0:\n        raise ValueError(n)\n    out = 1\n"
            "    for i in range(1, n):\n        out *= i\n    return out",
            "def factorial(n):\n    if n < 0:\n        raise ValueError(n)\n"
            "    return n * factorial(n - 1) if n > 1 else n",
        ],
        "def factorial(n):\n    if n < 0:\n        raise ValueError(n)\n    out = 1\n"
        "    for i in range(2, n + 1):\n        out *= i\n    return out",
        """
import pytest
from solution import factorial
def test_factorial():
    assert [factorial(n) for n in range(6)] == [1, 1, 2, 6, 24, 120]
    with pytest.raises(ValueError):
        factorial(-1)
""",
    ),
    _case(
        "count-vowels",
        "Write count_vowels(s): how many of its letters are vowels (a, e, i, o, u; any case).",
        [
            "def count_vowels(s):\n    return sum(1 for c in s if c in 'aeiou')",
            "def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiouy')",
        ],
        "def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiou')",
        """
from solution import count_vowels
def test_vowels():
    assert count_vowels("Education") == 5
    assert count_vowels("rhythm") == 0
""",
    ),
    _case(
        "to-binary",
        "Write to_binary(n): the binary digits of a non-negative int, without prefix.",
        [
            "def to_binary(n):\n    out = ''\n    while n:\n        out = str(n % 2) + out\n"
            "        n //= 2\n    return out",
            "def to_binary(n):\n    out = ''\n    while True:\n        out += str(n % 2)\n"
            "        n //= 2\n        if n == 0:\n            return out",
        ],
        "def to_binary(n):\n    return format(n, 'b')",
        """
from solution import to_binary
def test_binary():
    assert to_binary(0) == "0" and to_binary(1) == "1"
    assert to_binary(6) == "110" and to_binary(11) == "1011"
""",
    ),
    _case(
        "anagrams",
        "Write are_anagrams(a, b): same letters with the same counts, ignoring spaces and case.",
        [
            "def are_anagrams(a, b):\n    return set(a.lower().replace(' ', '')) == "
            "set(b.lower().replace(' ', ''))",
            "def are_anagrams(a, b):\n    return sorted(a.lower()) == sorted(b.lower())",
        ],
        "def are_anagrams(a, b):\n    def norm(s):\n"
        "        return sorted(s.lower().replace(' ', ''))\n"
        "    return norm(a) == norm(b)",
        """
from solution import are_anagrams
def test_anagrams():
    assert are_anagrams("Dormitory", "dirty room")
    assert not are_anagrams("aab", "abb")
""",
    ),
    _case(
        "dedupe",
        "Write dedupe(items): the items without repeats, each kept at its first position.",
        [
            "def dedupe(items):\n    return list(dict.fromkeys(reversed(items)))[::-1]",
            "def dedupe(items):\n    return sorted(set(items))",
        ],
        "def dedupe(items):\n    return list(dict.fromkeys(items))",
        """
from solution import dedupe
def test_dedupe():
    assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]
""",
    ),
    _case(
        "caesar",
        "Write caesar(s, k): shift letters k places (wrapping, case kept), other characters "
        "unchanged.",
        [
            "def caesar(s, k):\n"
            "    return ''.join(chr(ord(c) + k) if c.isalpha() else c for c in s)",
            "def caesar(s, k):\n    out = []\n    for c in s:\n        if c.isalpha():\n"
            "            out.append(chr((ord(c.lower()) - 97 + k) % 26 + 97))\n"
            "        else:\n            out.append(c)\n    return ''.join(out)",
        ],
        "def caesar(s, k):\n    out = []\n    for c in s:\n        if c.isalpha():\n"
        "            base = 65 if c.isupper() else 97\n"
        "            out.append(chr((ord(c) - base + k) % 26 + base))\n"
        "        else:\n            out.append(c)\n    return ''.join(out)",
        """
from solution import caesar
def test_caesar():
    assert caesar("Hello, World!", 3) == "Khoor, Zruog!"
    assert caesar("xyz", 3) == "abc"
""",
    ),
    _case(
        "moving-average",
        "Write moving_average(xs, w): the means of every window of w consecutive values.",
        [
            "def moving_average(xs, w):\n"
            "    return [sum(xs[i:i + w]) / w for i in range(len(xs) - w)]",
            "def moving_average(xs, w):\n"
            "    return [sum(xs[i:i + w]) // w for i in range(len(xs) - w + 1)]",
        ],
        "def moving_average(xs, w):\n"
        "    return [sum(xs[i:i + w]) / w for i in range(len(xs) - w + 1)]",
        """
from solution import moving_average
def test_moving_average():
    assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]
    assert moving_average([5, 5], 2) == [5.0]
""",
    ),
]


# The ten-task corpus (``dev_core``): its name → this module's case of the same task.
LEFT_OUT = frozenset({"factorial", "chunks"})
SAME_TASK = {
    "is_prime": "is-prime",
    "is_palindrome": "palindrome",
    "flatten": "flatten",
    "count_vowels": "count-vowels",
}
# A second wrong version for the four ten-task tasks that had no case here, and a test each
# needs to catch it where the ten-task acceptance tests do not.
_SECOND_WRONG = {
    "fibonacci": (
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n"
        "    return a\n",
        "",
    ),
    "median": (
        "def median(xs):\n    s = sorted(xs)\n    n = len(s)\n"
        "    return (s[n // 2 - 1] + s[n // 2]) / 2\n",
        "",
    ),
    "binary_search": (
        "def binary_search(xs, target):\n    lo, hi = 0, len(xs)\n    while lo <= hi:\n"
        "        mid = (lo + hi) // 2\n        if xs[mid] == target:\n            return mid\n"
        "        if xs[mid] < target:\n            lo = mid + 1\n        else:\n"
        "            hi = mid - 1\n    return -1\n",
        "",
    ),
    "gcd": (
        "def gcd(a, b):\n    a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n"
        "    return a or 1\n",
        "\n\ndef test_zero():\n    assert gcd(0, 0) == 0\n",
    ),
}


def _holds(answer: str, code: str) -> bool:
    """Whether ``answer`` holds ``code`` (whitespace aside: the corpora space ``**`` apart)."""
    return "".join(code.split()) in "".join(answer.split())


def merged(core: DevTask, own: SelectionCase | None) -> SelectionCase:
    """One case of a ten-task task: its wrong and right answers (code and tests), the other
    wrong version (this module's, or ``_SECOND_WRONG``), and every acceptance test."""
    if own is None:
        code, extra_test = _SECOND_WRONG[core.name]
        others, tests, task_id = [python_answer(code)], core.acceptance + extra_test, core.name
    else:
        others = [
            c
            for i, c in enumerate(own.candidates)
            if i != own.right_index and not _holds(c, core.wrong)
        ]
        tests, task_id = own.acceptance_tests + "\n\n" + core.acceptance, own.task_id
    candidates = [core.answer(right=False), *others, core.answer(right=True)]
    return SelectionCase(
        task_id, "DEV", core.task, candidates, len(candidates) - 1, tests, {"expect": "tests"}
    )


_BY_ID = {c.task_id: c for c in _OWN}
CASES = [c for c in _OWN if c.task_id not in SAME_TASK.values()] + [
    merged(t, _BY_ID[SAME_TASK[t.name]] if t.name in SAME_TASK else None)
    for t in TASKS
    if t.name not in LEFT_OUT
]
