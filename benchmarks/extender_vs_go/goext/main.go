// goext is the Go side of kubesched's extender benchmark: the custom-label policy
// (../POLICY.md) served over kube-scheduler's extender protocol with the standard
// library alone. It decodes only the fields the policy reads, which makes it the
// quickest honest Go baseline; full Node objects are echoed back as raw JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
)

const (
	resource = "example.com/custom-resource"
	// unknownNode is filter's reason for a name the node cache lacks: resolvable, since the
	// node may still arrive, and a rejected node makes kube-scheduler retry on node events.
	unknownNode = "node is not in the extender's node cache (yet); the pod is retried when nodes change"
)

// nodeView is the part of a v1.Node the policy looks at.
type nodeView struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Allocatable map[string]string `json:"allocatable"`
	} `json:"status"`
}

// podView is the part of a v1.Pod the policy looks at.
type podView struct {
	Spec struct {
		Containers []struct {
			Resources struct {
				Requests map[string]string `json:"requests"`
				Limits   map[string]string `json:"limits"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
}

type rawItems struct {
	Items []json.RawMessage `json:"items"`
}

// args is ExtenderArgs (Go field names, matched case-insensitively by encoding/json).
type args struct {
	Pod       *podView
	Nodes     *rawItems
	NodeNames *[]string
}

type filterReply struct {
	Nodes                      *rawItems         `json:"Nodes"`
	NodeNames                  *[]string         `json:"NodeNames"`
	FailedNodes                map[string]string `json:"FailedNodes"`
	FailedAndUnresolvableNodes map[string]string `json:"FailedAndUnresolvableNodes"`
	Error                      string            `json:"Error"`
}

type score struct {
	Host  string `json:"Host"`
	Score int64  `json:"Score"`
}

// candidate is one node to judge, with its raw JSON when the request carried full nodes.
type candidate struct {
	view *nodeView
	raw  json.RawMessage
}

type server struct {
	known map[string]*nodeView // the node cache, for requests that carry names
}

// amount reads a quantity of the resource; the policy uses plain integers only.
func amount(m map[string]string) int64 {
	v, err := strconv.ParseInt(m[resource], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func demand(p *podView) int64 {
	var total int64
	for _, c := range p.Spec.Containers {
		if _, ok := c.Resources.Requests[resource]; ok {
			total += amount(c.Resources.Requests)
		} else {
			total += amount(c.Resources.Limits)
		}
	}
	return total
}

// read decodes the request and resolves its candidates; names the cache lacks are returned apart.
func (s *server) read(w http.ResponseWriter, r *http.Request) (*args, []candidate, []string, bool) {
	var a args
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		http.Error(w, "cannot decode ExtenderArgs: "+err.Error(), http.StatusBadRequest)
		return nil, nil, nil, false
	}
	if a.Pod == nil {
		http.Error(w, "ExtenderArgs has no Pod", http.StatusBadRequest)
		return nil, nil, nil, false
	}
	var out []candidate
	var unknown []string
	switch {
	case a.Nodes != nil:
		out = make([]candidate, len(a.Nodes.Items))
		for i, raw := range a.Nodes.Items {
			out[i] = candidate{view: &nodeView{}, raw: raw}
			if err := json.Unmarshal(raw, out[i].view); err != nil {
				http.Error(w, fmt.Sprintf("Nodes.items[%d]: %v", i, err), http.StatusBadRequest)
				return nil, nil, nil, false
			}
		}
	case a.NodeNames != nil:
		out = make([]candidate, 0, len(*a.NodeNames))
		for _, name := range *a.NodeNames {
			if v, ok := s.known[name]; ok {
				out = append(out, candidate{view: v})
			} else {
				unknown = append(unknown, name)
			}
		}
	}
	return &a, out, unknown, true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("writing reply: %v", err)
	}
}

func (s *server) filter(w http.ResponseWriter, r *http.Request) {
	a, cands, unknown, ok := s.read(w, r)
	if !ok {
		return
	}
	need := demand(a.Pod)
	res := filterReply{FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}}
	names := []string{}
	items := []json.RawMessage{}
	for _, c := range cands {
		n := c.view
		name := n.Metadata.Name
		if _, labelled := n.Metadata.Labels["custom"]; !labelled {
			res.FailedAndUnresolvableNodes[name] = "node(s) didn't have label custom"
		} else if n.Spec.Unschedulable {
			res.FailedAndUnresolvableNodes[name] = "node(s) were unschedulable"
		} else if amount(n.Status.Allocatable) < need {
			res.FailedNodes[name] = "Insufficient " + resource
		} else {
			names = append(names, name)
			items = append(items, c.raw)
		}
	}
	for _, name := range unknown {
		res.FailedNodes[name] = unknownNode
	}
	if a.NodeNames != nil {
		res.NodeNames = &names
	} else {
		res.Nodes = &rawItems{Items: items}
	}
	reply(w, &res)
}

func (s *server) prioritize(w http.ResponseWriter, r *http.Request) {
	_, cands, _, ok := s.read(w, r)
	if !ok {
		return
	}
	var most int64
	for _, c := range cands {
		most = max(most, amount(c.view.Status.Allocatable))
	}
	scores := make([]score, len(cands))
	for i, c := range cands {
		scores[i].Host = c.view.Metadata.Name
		if most > 0 {
			scores[i].Score = 10 * amount(c.view.Status.Allocatable) / most
		}
	}
	reply(w, scores)
}

func loadCache(path string) (map[string]*nodeView, error) {
	known := map[string]*nodeView{}
	if path == "" {
		return known, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []nodeView `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range list.Items {
		known[list.Items[i].Metadata.Name] = &list.Items[i]
	}
	return known, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:18888", "HOST:PORT to serve on")
	nodes := flag.String("nodes", "", "NodeList JSON file: the node cache for requests that carry NodeNames")
	flag.Parse()
	known, err := loadCache(*nodes)
	if err != nil {
		log.Fatal(err)
	}
	s := &server{known: known}
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", s.filter)
	mux.HandleFunc("/prioritize", s.prioritize)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
