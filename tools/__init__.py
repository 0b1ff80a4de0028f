"""Maintainer tools, kept apart from ``helpers`` (the package learners import): run them
from the course's root as ``python -m tools.<name>``. ``slides`` lays the notebooks out as
slides and exports the offline deck (``deck``); ``lecture`` writes the lecture copy;
``links`` writes the notebooks' setup cell and the README's launch links; ``course_zip``
the course's zip for learners."""
