package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					c.Write(line)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func TestPauseHoldsBytesAndCutResets(t *testing.T) {
	p := Start(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 10*time.Second); err != nil {
		t.Fatalf("forwarded round trip: %v", err)
	}

	p.Pause()
	if err := roundTrip(c, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("round trip while paused: %v, want a timeout", err)
	}
	p.Resume()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("held bytes after Resume: %v", err)
	}

	p.Cut()
	if err := roundTrip(c, 10*time.Second); err == nil {
		t.Fatal("round trip on a cut connection succeeded")
	}
	p.Heal()
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 10*time.Second); err != nil {
		t.Fatalf("round trip after Heal: %v", err)
	}
}
