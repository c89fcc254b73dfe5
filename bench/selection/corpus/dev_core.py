"""Ten small DEV tasks, each with one right and one subtly wrong candidate, and acceptance tests.

Both candidates of a task compile and lint clean (so static checks cannot tell them apart: they
tied on every task before the sandbox ran them); only running them shows which is right. Each
candidate also carries its own tests, as DEV agents are asked to write (cross-execution): the
right one's tests include the edge case its wrong twin misses, the wrong one's only the common
case. ``answer`` gives a candidate as a DEV agent's text (one fenced block, tests after code).

Used by the ten-task gRPC case (tests/e2e/test_checks_pick_right.py), the sandbox bench and the
selection corpus.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DevTask:
    name: str
    task: str
    right: str
    wrong: str
    acceptance: str
    right_tests: str
    wrong_tests: str

    def answer(self, *, right: bool) -> str:
        """A candidate as a DEV agent writes it: code, then its tests, in one block."""
        code, tests = (self.right, self.right_tests) if right else (self.wrong, self.wrong_tests)
        return f"```python\n{code.strip()}\n\n\n{tests.strip()}\n```"


TASKS: tuple[DevTask, ...] = (
    DevTask(
        name="fibonacci",
        task="Write fib(n) returning the n-th Fibonacci number, fib(0) == 0 and fib(1) == 1.",
        right="def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
        "    return a\n",
        wrong="def fib(n):\n    a, b = 1, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n"
        "    return a\n",
        acceptance="from solution import fib\n\n\ndef test_start():\n    assert fib(0) == 0\n"
        "    assert fib(1) == 1\n\n\ndef test_later():\n    assert fib(10) == 55\n",
        right_tests="def test_fib_zero():\n    assert fib(0) == 0\n\n\n"
        "def test_fib_ten():\n    assert fib(10) == 55\n",
        wrong_tests="def test_fib_small():\n    assert fib(2) == 1\n",
    ),
    DevTask(
        name="median",
        task="Write median(xs) returning the median of a non-empty list of numbers.",
        right="def median(xs):\n    s = sorted(xs)\n    n = len(s)\n    m = n // 2\n"
        "    return s[m] if n % 2 else (s[m - 1] + s[m]) / 2\n",
        wrong="def median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",
        acceptance="from solution import median\n\n\ndef test_odd():\n"
        "    assert median([3, 1, 2]) == 2\n\n\ndef test_even():\n"
        "    assert median([4, 1, 3, 2]) == 2.5\n",
        right_tests="def test_median_even():\n    assert median([1, 2, 3, 4]) == 2.5\n",
        wrong_tests="def test_median_odd():\n    assert median([5, 1, 3]) == 3\n",
    ),
    DevTask(
        name="binary_search",
        task="Write binary_search(xs, target) returning the index of target in the sorted list "
        "xs, or -1 when it is absent.",
        right="def binary_search(xs, target):\n    lo, hi = 0, len(xs) - 1\n    while lo <= hi:\n"
        "        mid = (lo + hi) // 2\n        if xs[mid] == target:\n            return mid\n"
        "        if xs[mid] < target:\n            lo = mid + 1\n        else:\n"
        "            hi = mid - 1\n    return -1\n",
        wrong="def binary_search(xs, target):\n    lo, hi = 0, len(xs) - 1\n    while lo < hi:\n"
        "        mid = (lo + hi) // 2\n        if xs[mid] == target:\n            return mid\n"
        "        if xs[mid] < target:\n            lo = mid + 1\n        else:\n"
        "            hi = mid - 1\n    return -1\n",
        acceptance="from solution import binary_search\n\n\ndef test_found():\n"
        "    assert binary_search([1, 3, 5, 7], 3) == 1\n"
        "    assert binary_search([1, 3, 5, 7], 7) == 3\n"
        "\n\ndef test_absent():\n    assert binary_search([1, 3, 5, 7], 4) == -1\n"
        "    assert binary_search([], 1) == -1\n",
        right_tests="def test_last():\n    assert binary_search([2, 4, 6], 6) == 2\n",
        wrong_tests="def test_first():\n    assert binary_search([2, 4, 6], 2) == 0\n",
    ),
    DevTask(
        name="gcd",
        task="Write gcd(a, b) returning the greatest common divisor of two integers (always "
        "non-negative; gcd(0, 0) == 0).",
        right="def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return abs(a)\n",
        wrong="def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        acceptance="from solution import gcd\n\n\ndef test_positive():\n"
        "    assert gcd(12, 18) == 6\n"
        "\n\ndef test_signs():\n    assert gcd(-4, 6) == 2\n    assert gcd(0, -5) == 5\n",
        right_tests="def test_gcd_signs():\n    assert gcd(0, -5) == 5\n",
        wrong_tests="def test_gcd():\n    assert gcd(9, 6) == 3\n",
    ),
    DevTask(
        name="is_prime",
        task="Write is_prime(n) returning True when the integer n is prime.",
        right="def is_prime(n):\n    if n < 2:\n        return False\n"
        "    for d in range(2, int(n**0.5) + 1):\n"
        "        if n % d == 0:\n            return False\n"
        "    return True\n",
        wrong="def is_prime(n):\n    if n < 2:\n        return False\n"
        "    for d in range(2, int(n**0.5)):\n        if n % d == 0:\n            return False\n"
        "    return True\n",
        acceptance="from solution import is_prime\n\n\ndef test_primes():\n"
        "    assert [n for n in range(20) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19]\n\n\n"
        "def test_squares():\n    assert not is_prime(9)\n    assert not is_prime(49)\n",
        right_tests="def test_nine():\n    assert not is_prime(9)\n",
        wrong_tests="def test_seven():\n    assert is_prime(7)\n",
    ),
    DevTask(
        name="factorial",
        task="Write factorial(n) returning n! for n >= 0.",
        right="def factorial(n):\n    out = 1\n    for k in range(2, n + 1):\n        out *= k\n"
        "    return out\n",
        wrong="def factorial(n):\n    out = 1\n    for k in range(2, n):\n        out *= k\n"
        "    return max(out, n)\n",
        acceptance="from solution import factorial\n\n\ndef test_small():\n"
        "    assert factorial(0) == 1\n    assert factorial(1) == 1\n    assert factorial(2) == 2\n"
        "\n\ndef test_five():\n    assert factorial(5) == 120\n",
        right_tests="def test_factorial_five():\n    assert factorial(5) == 120\n",
        wrong_tests="def test_factorial_one():\n    assert factorial(1) == 1\n",
    ),
    DevTask(
        name="is_palindrome",
        task="Write is_palindrome(s) returning True when s reads the same both ways, ignoring "
        "case and anything that is not a letter or digit.",
        right="def is_palindrome(s):\n    kept = [c.lower() for c in s if c.isalnum()]\n"
        "    return kept == kept[::-1]\n",
        wrong="def is_palindrome(s):\n    kept = s.lower()\n    return kept == kept[::-1]\n",
        acceptance="from solution import is_palindrome\n\n\ndef test_plain():\n"
        "    assert is_palindrome('Level')\n    assert not is_palindrome('abc')\n\n\n"
        "def test_punctuation():\n    assert is_palindrome('A man, a plan, a canal: Panama')\n",
        right_tests="def test_sentence():\n    assert is_palindrome('No lemon, no melon')\n",
        wrong_tests="def test_word():\n    assert is_palindrome('racecar')\n",
    ),
    DevTask(
        name="flatten",
        task="Write flatten(xs) returning the items of an arbitrarily nested list, in order, as "
        "one flat list.",
        right="def flatten(xs):\n    out = []\n    for x in xs:\n        if isinstance(x, list):\n"
        "            out.extend(flatten(x))\n        else:\n            out.append(x)\n"
        "    return out\n",
        wrong="def flatten(xs):\n    out = []\n    for x in xs:\n        if isinstance(x, list):\n"
        "            out.extend(x)\n        else:\n            out.append(x)\n    return out\n",
        acceptance="from solution import flatten\n\n\ndef test_one_level():\n"
        "    assert flatten([1, [2, 3], 4]) == [1, 2, 3, 4]\n\n\ndef test_deep():\n"
        "    assert flatten([1, [2, [3, [4]]]]) == [1, 2, 3, 4]\n",
        right_tests="def test_deep():\n    assert flatten([[[1]], 2]) == [1, 2]\n",
        wrong_tests="def test_flat():\n    assert flatten([1, [2]]) == [1, 2]\n",
    ),
    DevTask(
        name="count_vowels",
        task="Write count_vowels(s) returning how many of the letters a, e, i, o, u (either "
        "case) s contains.",
        right="def count_vowels(s):\n    return sum(1 for c in s.lower() if c in 'aeiou')\n",
        wrong="def count_vowels(s):\n    return sum(1 for c in s if c in 'aeiou')\n",
        acceptance="from solution import count_vowels\n\n\ndef test_lower():\n"
        "    assert count_vowels('banana') == 3\n\n\ndef test_upper():\n"
        "    assert count_vowels('AEIOU xyz') == 5\n",
        right_tests="def test_mixed():\n    assert count_vowels('Apple') == 2\n",
        wrong_tests="def test_word():\n    assert count_vowels('hello') == 2\n",
    ),
    DevTask(
        name="chunks",
        task="Write chunks(xs, n) splitting the list xs into consecutive lists of n items; the "
        "last one may be shorter.",
        right="def chunks(xs, n):\n    return [xs[i : i + n] for i in range(0, len(xs), n)]\n",
        wrong="def chunks(xs, n):\n"
        "    return [xs[i : i + n] for i in range(0, len(xs) - n + 1, n)]\n",
        acceptance="from solution import chunks\n\n\ndef test_even():\n"
        "    assert chunks([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]\n\n\ndef test_rest():\n"
        "    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\n"
        "    assert chunks([], 3) == []\n",
        right_tests="def test_rest():\n    assert chunks([1, 2, 3], 2) == [[1, 2], [3]]\n",
        wrong_tests="def test_pairs():\n    assert chunks([1, 2], 1) == [[1], [2]]\n",
    ),
)
