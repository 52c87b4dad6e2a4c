// Command fasthttp serves the TechEmpower /plaintext and /json tests with valyala/fasthttp.
//
//	fasthttp --addr 127.0.0.1:8080 --workers 1
//
// --workers sets GOMAXPROCS: the number of OS threads running Go code at once. fasthttp writes
// Server, Date (its own per-second cache) and Content-Length itself. /json is serialized for every
// request with encoding/json from the standard library.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"runtime"

	"github.com/valyala/fasthttp"
)

type message struct {
	Message string `json:"message"`
}

func handle(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/plaintext":
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("Hello, World!")
	case "/json":
		body, err := json.Marshal(message{Message: "Hello, World!"})
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	default:
		ctx.Error("Not Found", fasthttp.StatusNotFound)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address, HOST:PORT")
	workers := flag.Int("workers", 1, "GOMAXPROCS")
	flag.Parse()
	runtime.GOMAXPROCS(*workers)
	server := &fasthttp.Server{
		Handler: handle,
		Name:    "fasthttp",
		// Default Concurrency (256 Ki connections) is plenty for the 5,000-connection idle test.
	}
	log.Printf("fasthttp: listening on %s with GOMAXPROCS=%d", *addr, *workers)
	log.Fatal(server.ListenAndServe(*addr))
}
