"""The jobs: each scans rows, does its work, writes rows, and returns counts.

A job never hands data to the next one through memory or files: all state is
in HBase, so every job can be stopped and run again.
"""
