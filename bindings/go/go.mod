module github.com/fp8attn/fp8attn/bindings/go

go 1.19
