"""The bad-input corpus: every command and file format fed input it must refuse with one line.

``fixtures`` holds small valid files of every format, ``cases`` the corpus (a list of :class:`Case`,
each a command line, the files it needs and fragments its one error line must hold), and
``test_corpus`` runs each case in an empty working directory.
"""
