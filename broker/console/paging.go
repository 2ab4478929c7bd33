package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// pageSizes are the lists' page sizes; the first is the default.
var pageSizes = []int64{50, 20, 100, 500}

// pageReq is the page of a list a request asks for, from its page (from
// 1) and size query parameters.
type pageReq struct{ page, size int64 }

// pageParams reads the page and size query parameters: a page that is
// not a number or below 1, or a size not in pageSizes, is an error to
// answer with 400. A page past the last is not: paginate shows the last.
func pageParams(r *http.Request) (pageReq, error) {
	page, err := intParam(r, "page", 1)
	if err == nil && page < 1 {
		err = fmt.Errorf("page: %d is not a page", page)
	}
	size, err2 := intParam(r, "size", pageSizes[0])
	if err == nil && (err2 != nil || !slices.Contains(pageSizes, size)) {
		err = fmt.Errorf("size: want one of %v", pageSizes)
	}
	if err != nil {
		return pageReq{}, err
	}
	return pageReq{page: page, size: size}, nil
}

// pageOf is the page of a list the request asks for; false (answered
// with 400) when its parameters are bad.
func (s *Server) pageOf(q *req) (pageReq, bool) {
	pr, err := pageParams(q.r)
	if err != nil {
		s.fail(q, http.StatusBadRequest, err)
		return pageReq{}, false
	}
	return pr, true
}

// pageInfo is where a page of a list is: page Page of Pages, Size rows a
// page, Shown of the Total (filtered) rows. List data embed it; the
// templates' "pager" and "sizes" blocks render it.
type pageInfo struct {
	Page, Pages, Size int64
	Total, Shown      int
	Sizes             []int64

	path string     // the list's path
	keep url.Values // the list's other parameters, kept by PageURL
}

// paginate cuts rows to the page pr asks for (the last one when it asks
// past the end) and describes it. path and keep (name, value pairs) are
// the list's path and the parameters (filter, order) its pager's links
// keep besides page and size.
func paginate[T any](rows []T, pr pageReq, path string, keep ...string) ([]T, pageInfo) {
	size := max(pr.size, 1)
	n := int64(len(rows))
	p := pageInfo{Size: size, Total: len(rows), Sizes: pageSizes, path: path, keep: url.Values{}}
	for i := 0; i+1 < len(keep); i += 2 {
		p.keep.Set(keep[i], keep[i+1])
	}
	p.Pages = max(1, (n+size-1)/size)
	p.Page = min(max(pr.page, 1), p.Pages)
	lo := min((p.Page-1)*size, n)
	hi := min(lo+size, n)
	p.Shown = int(hi - lo)
	return rows[lo:hi], p
}

// PageURL is the list's URL at page n, its size and other parameters
// kept.
func (p pageInfo) PageURL(n int64) template.URL {
	v := url.Values{}
	for k, vs := range p.keep {
		v[k] = vs
	}
	v.Set("size", strconv.FormatInt(p.Size, 10))
	v.Set("page", strconv.FormatInt(n, 10))
	return template.URL(p.path + "?" + v.Encode())
}
