"""Tandem's harness: build inputs for QEMU, boot it, run commands and experiments."""
