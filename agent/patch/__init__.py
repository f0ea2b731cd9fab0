"""The patch lifecycle: which units a patch touches, validating it (compile, import) and the fix session."""
