"""The results directory: the writer that never destroys a user's files, report.html, manifest.json, progress."""
