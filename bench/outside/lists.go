// An independent walk of `npm run bench`'s list rows (bench/api.ts): Go's net/http and nothing of
// the service's repository, so the benchmark's figures can be checked against a load generator
// that shares none of its code, pool or timing. The same shape: a random organisation and
// principal a request, a random page (1-8) and size (10, 20 or 50), and in about two requests of
// three a filter (a status, a word, a 30-day window of start dates, an account).
//
//	go run bench/outside/lists.go -origin=http://127.0.0.1:3000 -row=list -tenants=tenants.json -connections=50 -duration=10s
//
// -row is `list` (GET /v1/events), `graphql` (the GraphQL `events` list an admin frontend asks for,
// its first page) or `baseline` (a bare `{ hello }`). -tenants names a JSON file of
// [{"slug", "accountIds", "principals"}] (the benchmark's organisations and their bearer
// credentials). It prints one JSON line: requests, requests a second, p50/p99 in milliseconds,
// answers that were not 2xx, transport errors and its own CPU time.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type tenant struct {
	Slug       string   `json:"slug"`
	AccountIDs []string `json:"accountIds"`
	Principals []string `json:"principals"`
}

var (
	words    = []string{"jazz", "rock", "opera", "comedy", "family", "festival", "classical", "theatre", "dance", "poetry"}
	statuses = []string{"draft", "published", "on_sale", "sold_out", "completed", "cancelled"}
	limits   = []string{"10", "20", "50"}
)

const eventFields = "id organisationId accountId name description status venueId timezone onSaleDate offSaleDate occurrenceCount ticketCount productCount tags isDeleted createdAt updatedAt createdBy"

const eventsQuery = `query($first: Int, $status: EventStatus, $q: String, $startDateFrom: LocalDate, $startDateTo: LocalDate, $accountId: ID) {
  events(first: $first, status: $status, q: $q, startDateFrom: $startDateFrom, startDateTo: $startDateTo, accountId: $accountId) {
    nodes { ` + eventFields + ` } pageInfo { hasNextPage endCursor } pagination { total } } }`

func pick(r *rand.Rand, items []string) string { return items[r.Intn(len(items))] }

// filter is one request's filter, as a list screen sends them: none for a third of the requests.
func filter(r *rand.Rand, t tenant) map[string]string {
	f := map[string]string{}
	roll := r.Float64()
	switch {
	case roll < 0.2:
		f["status"] = pick(r, statuses)
	case roll < 0.4:
		f["q"] = pick(r, words)
	case roll < 0.55:
		from := time.Now().Add(time.Duration(r.Intn(300)) * 24 * time.Hour)
		f["from"] = from.Format("2006-01-02")
		f["to"] = from.Add(30 * 24 * time.Hour).Format("2006-01-02")
	case roll < 0.65:
		f["accountId"] = pick(r, t.AccountIDs)
	}
	return f
}

func request(r *rand.Rand, origin, row string, tenants []tenant) (*http.Request, error) {
	if row == "baseline" {
		req, err := http.NewRequest("POST", origin+"/graphql", strings.NewReader(`{"query":"{ hello }"}`))
		if err == nil {
			req.Header.Set("content-type", "application/json")
		}
		return req, err
	}
	t := tenants[r.Intn(len(tenants))]
	f := filter(r, t)
	limit := pick(r, limits)
	var req *http.Request
	var err error
	if row == "list" {
		query := url.Values{"page": {strconv.Itoa(1 + r.Intn(8))}, "limit": {limit}}
		for name, value := range f {
			query.Set(name, value)
		}
		req, err = http.NewRequest("GET", origin+"/v1/events?"+query.Encode(), nil)
	} else {
		first, _ := strconv.Atoi(limit)
		variables := map[string]any{"first": first}
		if v, ok := f["status"]; ok {
			variables["status"] = strings.ToUpper(v)
		}
		if v, ok := f["q"]; ok {
			variables["q"] = v
		}
		if v, ok := f["from"]; ok {
			variables["startDateFrom"] = v
			variables["startDateTo"] = f["to"]
		}
		if v, ok := f["accountId"]; ok {
			variables["accountId"] = v
		}
		body, _ := json.Marshal(map[string]any{"query": eventsQuery, "variables": variables})
		req, err = http.NewRequest("POST", origin+"/graphql", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("content-type", "application/json")
		}
	}
	if err == nil {
		req.Header.Set("authorization", "Bearer "+pick(r, t.Principals))
		req.Header.Set("x-service-org", t.Slug)
	}
	return req, err
}

func main() {
	origin := flag.String("origin", "http://127.0.0.1:3000", "the API's origin")
	row := flag.String("row", "list", "list, graphql or baseline")
	tenantsFile := flag.String("tenants", "", "a JSON file of the organisations and their principals")
	connections := flag.Int("connections", 50, "connections, each with one request in flight")
	duration := flag.Duration("duration", 10*time.Second, "how long to walk")
	flag.Parse()

	var tenants []tenant
	if *row != "baseline" {
		data, err := os.ReadFile(*tenantsFile)
		if err == nil {
			err = json.Unmarshal(data, &tenants)
		}
		if err != nil || len(tenants) == 0 {
			fmt.Fprintln(os.Stderr, "-tenants must name a JSON file of organisations:", err)
			os.Exit(2)
		}
	}
	transport := &http.Transport{MaxIdleConnsPerHost: *connections, MaxConnsPerHost: *connections, DisableCompression: true}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	var mu sync.Mutex
	var latencies []float64
	non2xx, failures := 0, 0
	started := time.Now()
	deadline := started.Add(*duration)
	var wg sync.WaitGroup
	for c := 0; c < *connections; c++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			var mine []float64
			bad, failed := 0, 0
			for time.Now().Before(deadline) {
				req, err := request(r, *origin, *row, tenants)
				if err != nil {
					failed++
					continue
				}
				sent := time.Now()
				res, err := client.Do(req)
				if err != nil {
					failed++
					continue
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil {
					failed++
					continue
				}
				mine = append(mine, float64(time.Since(sent).Microseconds())/1000)
				if res.StatusCode < 200 || res.StatusCode > 299 {
					bad++
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			non2xx += bad
			failures += failed
			mu.Unlock()
		}(started.UnixNano() + int64(c))
	}
	wg.Wait()
	elapsed := time.Since(started).Seconds()
	sort.Float64s(latencies)
	quantile := func(q float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(q*float64(len(latencies)-1))]
	}
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	out, _ := json.Marshal(map[string]any{
		"requests":          len(latencies),
		"requestsPerSecond": float64(len(latencies)) / elapsed,
		"p50":               quantile(0.5),
		"p99":               quantile(0.99),
		"non2xx":            non2xx,
		"errors":            failures,
		"cpuMs":             float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e6,
	})
	fmt.Println(string(out))
}
