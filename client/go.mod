module github.com/mediagen-dev/mediagen/client

go 1.22
