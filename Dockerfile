# Multi-stage build of trawl's two binaries. The runtime image has no shell
# and runs as an unprivileged user; state goes to the /data volume.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/crawler ./cmd/crawler \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/frontier ./cmd/frontier

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/crawler /out/frontier /usr/local/bin/
COPY config.example.yaml /etc/trawl/config.example.yaml
VOLUME /data
WORKDIR /data
ENV TRAWL_DATA_DIR=/data
ENTRYPOINT ["/usr/local/bin/crawler"]
