"""The one entry point of every Python test file (integration and
packaging): runs the file's unittest tests and turns the result into the
exit status CTest reads.

Every Python test is registered with SKIP_RETURN_CODE 77, so a file whose
tests all skipped (not root, a tool or kernel feature missing) shows as
"Not Run" instead of passing. The skipped tests and their reasons are
listed at the end of the output whenever there are any.
"""

import sys
import unittest

SKIPPED = 77  # the SKIP_RETURN_CODE of every test (tests/CMakeLists.txt)


def exit_status(result):
    """The exit status for a finished unittest result: 1 when a test failed,
    raised an error or unexpectedly succeeded, or when nothing was run or
    skipped; SKIPPED when every test was skipped; else 0."""
    if not result.wasSuccessful():
        return 1
    # A SkipTest from setUpClass or setUpModule is reported once, for the
    # class or module, by a placeholder that is not a TestCase and is not
    # counted in testsRun.
    skipped_cases = sum(1 for t, _ in result.skipped if isinstance(t, unittest.TestCase))
    ran = result.testsRun - skipped_cases
    if ran > 0:
        return 0
    return SKIPPED if result.skipped else 1


def main():
    """Runs the tests of __main__ (command-line arguments as unittest.main's:
    test names, -k patterns) with verbose output; lists the skipped tests
    with their reasons on stderr; exits with exit_status()."""
    prog = unittest.main(module="__main__", verbosity=2, exit=False)
    result = prog.result
    status = exit_status(result)
    out = sys.stderr
    if result.skipped:
        print(f"\n{len(result.skipped)} skipped:", file=out)
        for test, why in result.skipped:
            print(f"  SKIPPED {test.id()}: {why}", file=out)
    if status == SKIPPED:
        print(f"every test skipped: exit {SKIPPED} (CTest: Not Run)", file=out)
    elif status == 1 and result.wasSuccessful():
        print("no test ran", file=out)
    sys.exit(status)
