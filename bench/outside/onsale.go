// An independent walk of the on-sale (bench/onsale.ts): Go's net/http and nothing of the service's
// repository, so the benchmark's figure can be checked against a load generator that shares none of
// its code, pool or timing. The same six requests a buyer: the listings, a cart, the checkout, the
// hosted checkout page, paying on it (a form POST) and the receipt it redirects to; the same
// addresses, emails, sessions and quantities for the same buyer numbers.
//
//	go run bench/outside/onsale.go -origin=http://127.0.0.1:3000 -key=svpk_... -buyers=5000 -connections=200
//
// It prints one JSON line: orders confirmed, tickets, seconds from the first request to the last
// confirmation, p50/p99 per step in milliseconds, answers by step and status, 5xx answers, and
// its own CPU time.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var steps = []string{"listings", "cart", "checkout", "page", "pay", "receipt"}

type walk struct {
	origin, key string
	client      *http.Client
	mu          sync.Mutex
	timings     map[string][]float64
	statuses    map[string]int
	serverErr   int
	confirmed   int
	tickets     int
	lastAt      time.Time
}

// quantityOf is bench/onsale.ts's: 1 for most, 2 for a quarter, 3 or 4 for a few; never more than
// the ticket type allows or the listings show left.
func quantityOf(n int, maxPerOrder, available *int) int {
	roll := (uint32(n) * 2654435761) % 100
	wanted := 4
	switch {
	case roll < 60:
		wanted = 1
	case roll < 85:
		wanted = 2
	case roll < 95:
		wanted = 3
	}
	if maxPerOrder != nil && *maxPerOrder < wanted {
		wanted = *maxPerOrder
	}
	if available != nil && *available < wanted {
		wanted = *available
	}
	if wanted < 1 {
		wanted = 1
	}
	return wanted
}

type answer struct {
	status  int
	headers http.Header
	body    []byte
}

func (w *walk) do(step, method, path string, headers map[string]string, body string) (answer, error) {
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.origin+path, reader)
	if err != nil {
		return answer{}, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	started := time.Now()
	res, err := w.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	elapsed := float64(time.Since(started).Microseconds()) / 1000
	w.mu.Lock()
	w.timings[step] = append(w.timings[step], elapsed)
	w.statuses[fmt.Sprintf("%s %d", step, res.StatusCode)]++
	if res.StatusCode >= 500 {
		w.serverErr++
	}
	w.mu.Unlock()
	return answer{res.StatusCode, res.Header, data}, err
}

func (w *walk) buyer(n int) error {
	client := fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
	headers := map[string]string{"x-channel-key": w.key, "x-forwarded-for": client, "content-type": "application/json"}
	remember := func(a answer) {
		if session := a.headers.Get("x-live-session"); session != "" {
			headers["x-live-session"] = session
		}
	}

	a, err := w.do("listings", "GET", "/live/sales/listings", headers, "")
	if err != nil || a.status != 200 {
		return err
	}
	remember(a)
	var listings struct {
		Events []struct {
			TicketTypes []struct {
				ID          string `json:"id"`
				MaxPerOrder *int   `json:"maxPerOrder"`
			} `json:"ticketTypes"`
			Occurrences []struct {
				ID           string `json:"id"`
				Availability []struct {
					TicketTypeID string `json:"ticketTypeId"`
					Available    *int   `json:"available"`
				} `json:"availability"`
			} `json:"occurrences"`
		} `json:"events"`
	}
	if err := json.Unmarshal(a.body, &listings); err != nil || len(listings.Events) == 0 || len(listings.Events[0].Occurrences) == 0 {
		return fmt.Errorf("listings: %v", err)
	}
	event := listings.Events[0]
	occurrence := event.Occurrences[0]
	type open struct {
		id        string
		available *int
	}
	var opens []open
	for _, av := range occurrence.Availability {
		if av.Available == nil || *av.Available > 0 {
			opens = append(opens, open{av.TicketTypeID, av.Available})
		}
	}
	if len(opens) == 0 {
		return nil
	}
	choice := opens[n%len(opens)]
	var maxPerOrder *int
	for _, t := range event.TicketTypes {
		if t.ID == choice.id {
			maxPerOrder = t.MaxPerOrder
		}
	}
	quantity := quantityOf(n, maxPerOrder, choice.available)

	items, _ := json.Marshal(map[string]any{"items": []map[string]any{{"occurrenceId": occurrence.ID, "ticketTypeId": choice.id, "quantity": quantity}}})
	a, err = w.do("cart", "POST", "/live/sales/carts", headers, string(items))
	if err != nil || a.status != 201 {
		return err
	}
	remember(a)
	var cart struct {
		Cart struct {
			ID string `json:"id"`
		} `json:"cart"`
	}
	if err := json.Unmarshal(a.body, &cart); err != nil {
		return err
	}

	customer, _ := json.Marshal(map[string]any{"customer": map[string]string{"email": fmt.Sprintf("buyer%d@onsale.test", n), "firstName": "Buyer", "lastName": fmt.Sprint(n)}})
	a, err = w.do("checkout", "POST", "/live/sales/carts/"+cart.Cart.ID+"/checkout", headers, string(customer))
	if err != nil || a.status != 201 {
		return err
	}
	var checkout struct {
		CheckoutURL string `json:"checkoutUrl"`
	}
	if err := json.Unmarshal(a.body, &checkout); err != nil {
		return err
	}
	page, err := url.Parse(checkout.CheckoutURL)
	if err != nil {
		return err
	}
	browser := map[string]string{"x-forwarded-for": client}
	if a, err = w.do("page", "GET", page.Path, browser, ""); err != nil || a.status != 200 {
		return err
	}
	form := url.Values{"name": {fmt.Sprintf("Buyer %d", n)}, "cardNumber": {"4242 4242 4242 4242"}, "expiry": {"12/30"}, "cvc": {"123"}}
	a, err = w.do("pay", "POST", page.Path, map[string]string{
		"x-forwarded-for": client, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin",
	}, form.Encode())
	if err != nil || a.status != 303 {
		return err
	}
	receipt := page.Path
	if location, err := url.Parse(a.headers.Get("location")); err == nil && location.Path != "" {
		receipt = location.Path
	}
	a, err = w.do("receipt", "GET", receipt, browser, "")
	if err == nil && a.status == 200 && strings.Contains(string(a.body), "is confirmed") {
		w.mu.Lock()
		w.confirmed++
		w.tickets += quantity
		w.lastAt = time.Now()
		w.mu.Unlock()
	}
	return err
}

func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	i := int(p / 100 * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func main() {
	origin := flag.String("origin", "http://127.0.0.1:3000", "the API's origin")
	key := flag.String("key", "", "a publishable channel key of the sale's channel")
	buyers := flag.Int("buyers", 5000, "buyers")
	connections := flag.Int("connections", 200, "buyers in flight (and connections)")
	first := flag.Int("first", 0, "the first buyer's number (addresses and emails follow it)")
	flag.Parse()

	transport := &http.Transport{MaxIdleConnsPerHost: *connections, MaxConnsPerHost: *connections, DisableCompression: true}
	w := &walk{
		origin:   *origin,
		key:      *key,
		timings:  map[string][]float64{},
		statuses: map[string]int{},
		client: &http.Client{
			Transport:     transport,
			Timeout:       60 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	var next int64 = -1
	var failures int64
	started := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < *connections; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(atomic.AddInt64(&next, 1))
				if n >= *buyers {
					return
				}
				if err := w.buyer(*first + n); err != nil && atomic.AddInt64(&failures, 1) <= 5 {
					fmt.Fprintf(os.Stderr, "buyer %d: %v\n", *first+n, err)
				}
			}
		}()
	}
	wg.Wait()

	p50 := map[string]float64{}
	p99 := map[string]float64{}
	for _, step := range steps {
		p50[step] = percentile(w.timings[step], 50)
		p99[step] = percentile(w.timings[step], 99)
	}
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	cpuMs := float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e6
	out, _ := json.Marshal(map[string]any{
		"cpuMs":          cpuMs,
		"confirmed":      w.confirmed,
		"tickets":        w.tickets,
		"soldOutSeconds": w.lastAt.Sub(started).Seconds(),
		"p50":            p50,
		"p99":            p99,
		"statuses":       w.statuses,
		"serverErrors":   w.serverErr,
		"failures":       failures,
	})
	fmt.Println(string(out))
}
