"""The course's tests: one folder or module per part of the course they test."""
