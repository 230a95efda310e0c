"""Units, exceptions and input validation shared by every layer."""
