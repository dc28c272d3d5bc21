// Empty: lets gopointer.go declare a function without a body (go:linkname).
