"""What the tool tests share: a failed expectation ends the test, showing the checked script's
output."""
import sys


def expect(condition, what, result):
    if not condition:
        print(f"FAILED: {what}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        sys.exit(1)
