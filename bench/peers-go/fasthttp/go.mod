module volt-bench/peers-go/fasthttp

// fasthttp v1.67.0 is pinned: later releases import github.com/molecule-man/go-brrr, which the Go
// module proxy does not serve.

go 1.24.0

require github.com/valyala/fasthttp v1.67.0

require (
	github.com/andybalholm/brotli v1.2.0 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)
