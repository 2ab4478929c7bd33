package console

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestPaginate(t *testing.T) {
	rows := make([]int, 120)
	for i := range rows {
		rows[i] = i
	}
	for _, c := range []struct {
		n, page, size      int64
		wantPage, wantPgs  int64
		wantFirst, wantLen int
	}{
		{n: 120, page: 1, size: 50, wantPage: 1, wantPgs: 3, wantFirst: 0, wantLen: 50},
		{n: 120, page: 2, size: 50, wantPage: 2, wantPgs: 3, wantFirst: 50, wantLen: 50},
		{n: 120, page: 3, size: 50, wantPage: 3, wantPgs: 3, wantFirst: 100, wantLen: 20},
		{n: 120, page: 99, size: 50, wantPage: 3, wantPgs: 3, wantFirst: 100, wantLen: 20}, // past the end: the last
		{n: 100, page: 2, size: 50, wantPage: 2, wantPgs: 2, wantFirst: 50, wantLen: 50},   // an exact multiple
		{n: 100, page: 3, size: 50, wantPage: 2, wantPgs: 2, wantFirst: 50, wantLen: 50},
		{n: 1, page: 1, size: 20, wantPage: 1, wantPgs: 1, wantFirst: 0, wantLen: 1},
		{n: 0, page: 1, size: 20, wantPage: 1, wantPgs: 1, wantLen: 0}, // empty: one empty page
		{n: 0, page: 5, size: 20, wantPage: 1, wantPgs: 1, wantLen: 0},
		{n: 120, page: 1 << 62, size: 500, wantPage: 1, wantPgs: 1, wantFirst: 0, wantLen: 120},
	} {
		got, p := paginate(rows[:c.n], pageReq{page: c.page, size: c.size}, "/x")
		if p.Page != c.wantPage || p.Pages != c.wantPgs || len(got) != c.wantLen || p.Shown != c.wantLen || p.Total != int(c.n) || p.Size != c.size {
			t.Errorf("%d rows, page %d of %d: got page %d of %d, %d shown (%d) of %d, size %d", c.n, c.page, c.size,
				p.Page, p.Pages, len(got), p.Shown, p.Total, p.Size)
			continue
		}
		if c.wantLen > 0 && got[0] != c.wantFirst {
			t.Errorf("%d rows, page %d of %d: starts at %d, want %d", c.n, c.page, c.size, got[0], c.wantFirst)
		}
	}
	// Every row is on exactly one page, in order.
	var all []int
	for page := int64(1); page <= 6; page++ {
		got, _ := paginate(rows, pageReq{page: page, size: 20}, "/x")
		all = append(all, got...)
	}
	if !slices.Equal(all, rows) {
		t.Fatalf("pages of 20 joined: %v", all)
	}
}

func TestPageParams(t *testing.T) {
	for q, want := range map[string]pageReq{
		"":                   {page: 1, size: 50},
		"?page=3":            {page: 3, size: 50},
		"?page=%203&size=20": {page: 3, size: 20},
		"?size=500":          {page: 1, size: 500},
	} {
		got, err := pageParams(httptest.NewRequest("GET", "/x"+q, nil))
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", q, got, err, want)
		}
	}
	for q, msg := range map[string]string{
		"?page=abc":         `page: "abc" is not a number`,
		"?page=0":           "page: 0 is not a page",
		"?page=-2":          "page: -2 is not a page",
		"?size=-1":          "size: want one of [50 20 100 500]",
		"?size=7":           "size: want one of",
		"?size=100000":      "size: want one of",
		"?size=x":           "size: want one of",
		"?page=abc&size=-1": "page:",
	} {
		if _, err := pageParams(httptest.NewRequest("GET", "/x"+q, nil)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", q, err, msg)
		}
	}
}

func TestPageURL(t *testing.T) {
	_, p := paginate(make([]int, 120), pageReq{page: 2, size: 50}, "/topics", "filter", "a b", "sort", "name", "order", "asc", "internal", "")
	// As the topic list's links were before they were shared.
	if got, want := string(p.PageURL(3)), "/topics?filter=a+b&internal=&order=asc&page=3&size=50&sort=name"; got != want {
		t.Fatalf("PageURL: %s, want %s", got, want)
	}
	if got := string(p.PageURL(1)); !strings.Contains(got, "page=1") || !strings.HasPrefix(got, "/topics?") {
		t.Fatalf("PageURL(1): %s", got)
	}
}
