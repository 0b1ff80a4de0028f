"""The course as a website: every notebook as a page, from its stored outputs.

    make site     # build/site/, a folder that works opened from disk or any static host

Sphinx with MyST-NB and sphinx-book-theme (the stack of Jupyter Book 1, the ``site``
extra). ``pages.py`` writes the source pages from the course's own files, ``conf.py`` is
Sphinx's configuration, ``build.py`` runs the build, ``static/`` holds the site's CSS.
"""
