// directcoll's packet-level engine: a schedule's messages as packets on an ns-3 network.
//
// The Python side (directcoll/simulate/packet.py) lowers a topology and a schedule to the text input read below
// and builds this file against Debian's ns-3 (libns3-dev) on first use. ns-3 does the simulation: point-to-point
// devices and channels (serialisation at the link's data rate, propagation delay, one FIFO queue per output port),
// the event scheduler and the packets. This program only wires them to the topology, forwards packets at every
// node (after a per-hop router delay, over a minimal next hop chosen by queue occupancy, or along a source route),
// and starts each transfer when the step semantics allow it.
//
// Model (docs/simulation.md, "The packet engine"):
// - Every directed link of the topology is one ns-3 PointToPointChannel between a transmitting device on its source
//   node and a receiving device on its far end, with the link's bandwidth and latency. Devices add ns-3's 2-byte
//   PPP header to every packet. Queues are deep enough that nothing is dropped (HPC fabrics are lossless by flow
//   control; here by buffers), and the run fails if a packet is dropped anyway.
// - Posting and protocols: when a transfer may start, its sender posts the send and its receiver the receive,
//   `message_overhead` (LogGP's o) each on the rank's first free thread (the implementation's threads; sends and
//   receives posted apart, as the models count the larger of a rank's sends and receives of a step); `alpha`
//   after both are posted it leaves: as data, or, above the eager threshold, as a rendezvous request (header bytes
//   only) to the receiver, which answers with a reply the same size, alpha after the request arrived; the data
//   leaves alpha after the reply arrived (each message of the handshake a message, as in the models). Both
//   travel through the network like data (minimal adaptive routes; dimension order where the data has source
//   routes on a torus), so the handshake costs a round trip and meets the traffic on its way.
// - A transfer of B bytes leaves as ceil(B / packet_size) packets (one empty packet for B = 0; a source
//   interleaves its active transfers packet by packet, see Pump), each carrying `header` bytes besides its payload
//   (at least the 2 of ns-3's PPP header, which counts towards them). Each packet pays `per_hop` at every router
//   that forwards it (the source's included, the destination's not), then waits in the chosen output queue and is
//   serialised onto the link.
// - NIC (with a host injection bandwidth): a rank's packets pass its NIC one after the other at that rate, into
//   its router and, arriving, out of the network (a packet holds its input buffer until the NIC has taken it).
// - Forwarding: store-and-forward (ns-3's own: a router has the whole packet before passing it on) or cut-through
//   (a router passes a packet on once its header has arrived, `header / bandwidth` after its first bit: emulated
//   by handing the packet to the next router when the transmission begins, at that time plus the link's latency;
//   the link stays busy for the whole packet, and the destination still waits for the last bit).
// - Routing: adaptive (at each router, the minimal next hop whose output queue holds the fewest bytes; ties in
//   round-robin order) or a source route per transfer (dimension order, or the schedule's explicit route).
// - Flow control (with a buffer size; without one, queues are unbounded as above): every directed link feeds an input
//   buffer of `buffer` bytes per virtual channel at its far end, and its sender holds a credit counter of those
//   bytes. An input buffer is first in, first out per channel: a packet out of the router's pipeline bids for its
//   output only once the packets that arrived before it on that link and channel have left (head-of-line blocking;
//   other channels of the same input pass it). A packet leaves a router (or the source's NIC) onto link l on virtual
//   channel v only when l's credits for v cover its wire bytes; it waits in FIFO order behind the packets for (l, v)
//   otherwise, holding the buffer it arrived in. Leaving, it crosses the router's crossbar, which takes one packet at
//   a time from an input at that input link's rate (no speedup, as SST merlin's xbar_bw = link_bw and BookSim's
//   internal_speedup 1), and frees its buffer as it starts across: the credit travels back to the upstream sender in
//   the link's latency plus `credit_delay`. A destination takes the packet heading its buffer at once, or through its
//   NIC (below), and returns its credit the same way. The virtual channel of each hop: "none" (one channel), "hops"
//   (the hop's index, capped at the last channel: deadlock-free with as many channels as the longest route has hops,
//   as a channel's packets only wait for higher channels) or "dateline" (per dimension of a torus: channel 0 until
//   the packet crosses its dimension's wrap-around link, channel 1 from that link on, back to 0 in a new dimension:
//   deadlock-free for dimension-order routes) or "duato" (minimal adaptive routing on channels 2 and up, with
//   channels 0 and 1 as the escape: as the packet leaves the router's pipeline it takes the least loaded minimal next
//   hop with an adaptive channel's credits free, else its dimension-order next hop's dateline channel if that one's
//   are; with neither, it waits for whichever of them frees first, as a virtual-channel allocator that retries all of
//   a packet's candidate channels every cycle does (BookSim's adaptive routing functions), preferring an adaptive
//   one: Duato's protocol). When the simulation runs out of events with packets still waiting, the buffers that wait
//   on each other are reported as a cycle.
// - Progress (the flow model's rule): a transfer of step t starts when its source and its destination have both
//   finished all their transfers of the steps before t. A rank's part of a transfer ends, as its source, when the
//   last packet has left on the first link, and as its destination when the last packet has arrived and, for a
//   reduction, `gamma * B` of the rank's reduction threads has run (its reductions share the implementation's
//   threads, each on the first one free), plus the implementation's per-reduction cost where it applies.
//
// Input (whitespace-separated, see packet.py): a header line, the nodes, the links (with each link's torus
// dimension, whether it wraps around and its direction), the torus's shape, the parameters, the flow control,
// then the transfers, each with its step, endpoints, bytes, reduce flag and source route (0 links: adaptive).
// Output: the completion time, per rank and step the time the rank finished the step, per link the bytes sent.

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/ppp-header.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <fstream>
#include <functional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <iomanip>
#include <iostream>
#include <limits>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ns3;

namespace {

// Which transfer a packet belongs to and where it is: kept by the engine per packet (its ns-3 uid, which copies
// share) rather than in a packet tag, whose list ns-3 copies and reallocates at every rewrite (one per hop).
struct TransferTag {
    uint32_t transfer = 0;
    uint32_t hop = 0;
    uint32_t link = UINT32_MAX;  // the link the packet arrived on (UINT32_MAX: still at its source)
    uint32_t vc = 0;             // and its virtual channel there
    uint32_t crossed = 0;        // 1: it crossed its current dimension's wrap-around link (the dateline)
    uint32_t kind = 0;           // kData, or a rendezvous's kRequest (to the destination) or kReply (back)
    uint32_t first = UINT32_MAX; // the link it left its source on: its end there counts the packet as sent
};

enum class VcScheme { kNone, kHops, kDateline, kDuato };
constexpr uint32_t kChoose = UINT32_MAX;  // a virtual channel chosen when the packet leaves the router (Duato)
constexpr uint32_t kData = 0, kRequest = 1, kReply = 2;  // what a packet carries: data, or a rendezvous message

struct Transfer {
    uint32_t step = 0, src = 0, dst = 0;
    uint64_t bytes = 0;
    bool reduce = false;
    std::vector<uint32_t> route;  // link ids in path order; empty: adaptive
    uint32_t packets = 0, left_to_send = 0, left_to_arrive = 0, packets_to_inject = 0;
    uint64_t left_to_inject = 0;
    bool started = false;
};

class Engine {
  public:
    explicit Engine(std::istream& in) { Read(in); }

    void Run() {
        BuildNetwork();
        for (uint32_t r = 0; r < n_compute_; ++r) Advance(r);
        Simulator::Run();
        Simulator::Destroy();
        const auto held = [](const auto& q) { return !q.empty(); };
        if (std::any_of(waiting_.begin(), waiting_.end(), held) ||
            std::any_of(undecided_.begin(), undecided_.end(), held))
            throw std::runtime_error(Deadlock());
    }

    void Write(std::ostream& out) const {
        out << std::setprecision(17);
        for (uint32_t r = 0; r < n_compute_; ++r)
            if (cur_[r] < steps_)
                throw std::runtime_error("rank " + std::to_string(r) + " never finished step " +
                                         std::to_string(cur_[r]));
        double end = 0;
        for (double t : finish_) end = std::max(end, t);
        out << "time " << end << "\n";
        out << "drops " << drops_ << "\n";
        out << "packets " << packets_ << "\n";
        out << "events " << events_ << "\n";
        out << "adaptive_hops " << adaptive_hops_ << "\n";
        out << "escape_hops " << escape_hops_ << "\n";
        size_t used = timeline_.size();
        while (used > 0 && timeline_[used - 1] == 0) --used;
        out << "timeline " << bin_;
        for (size_t i = 0; i < used; ++i) out << " " << timeline_[i];
        out << "\n";
        out << "steps " << n_compute_ << " " << steps_ << "\n";
        for (uint32_t r = 0; r < n_compute_; ++r) {
            for (uint32_t t = 0; t < steps_; ++t) out << step_end_[r * steps_ + t] << (t + 1 < steps_ ? " " : "");
            out << "\n";
        }
        out << "links " << link_src_.size() << "\n";
        for (size_t l = 0; l < link_src_.size(); ++l) out << link_bytes_[l] << "\n";
    }

  private:
    // -- input ------------------------------------------------------------------------------------------------
    template <typename T> T Next(std::istream& in, const char* what) {
        T value;
        if (!(in >> value)) throw std::runtime_error(std::string("bad input: expected ") + what);
        return value;
    }
    void Expect(std::istream& in, const std::string& word) {
        if (Next<std::string>(in, word.c_str()) != word) throw std::runtime_error("bad input: expected " + word);
    }

    void Read(std::istream& in) {
        Expect(in, "directcoll-packet");
        if (Next<int>(in, "format version") != 2) throw std::runtime_error("unsupported input format version");
        Expect(in, "nodes");
        n_nodes_ = Next<uint32_t>(in, "node count");
        n_compute_ = Next<uint32_t>(in, "compute node count");
        Expect(in, "links");
        const auto n_links = Next<uint32_t>(in, "link count");
        link_src_.resize(n_links);
        link_dst_.resize(n_links);
        link_bw_.resize(n_links);
        link_lat_.resize(n_links);
        link_dim_.resize(n_links);
        link_wraps_.resize(n_links);
        link_dir_.resize(n_links);
        for (uint32_t l = 0; l < n_links; ++l) {
            link_src_[l] = Next<uint32_t>(in, "link source");
            link_dst_[l] = Next<uint32_t>(in, "link destination");
            link_bw_[l] = Next<double>(in, "link bandwidth");
            link_lat_[l] = Next<double>(in, "link latency");
            link_dim_[l] = Next<int>(in, "link dimension");
            link_wraps_[l] = Next<int>(in, "link wrap-around flag") != 0;
            link_dir_[l] = Next<int>(in, "link direction");
            if (link_src_[l] >= n_nodes_ || link_dst_[l] >= n_nodes_ || !(link_bw_[l] > 0) || link_lat_[l] < 0)
                throw std::runtime_error("bad link " + std::to_string(l));
        }
        Expect(in, "shape");
        shape_.resize(Next<uint32_t>(in, "dimensions"));
        for (auto& side : shape_) side = Next<uint32_t>(in, "side");
        stride_.assign(shape_.size(), 1);  // row-major: the last dimension varies fastest
        for (size_t i = shape_.size(); i-- > 1;) stride_[i - 1] = stride_[i] * shape_[i];
        Expect(in, "params");
        packet_size_ = Next<uint64_t>(in, "packet size");
        per_hop_ = Next<double>(in, "per-hop latency");
        alpha_ = Next<double>(in, "alpha");
        gamma_ = Next<double>(in, "gamma");
        header_ = Next<uint64_t>(in, "header bytes");
        cut_through_ = Next<int>(in, "cut-through flag") != 0;
        threads_ = Next<uint32_t>(in, "reduction threads");
        eager_ = Next<double>(in, "eager threshold");
        overhead_ = Next<double>(in, "message overhead");
        injection_ = Next<double>(in, "host injection bandwidth");
        fork_ = Next<double>(in, "reduction overhead");
        fork_threshold_ = Next<double>(in, "reduction threshold");
        if (packet_size_ < 1 || per_hop_ < 0 || alpha_ < 0 || gamma_ < 0 || header_ < 2 || threads_ < 1 ||
            overhead_ < 0 || injection_ < 0 || fork_ < 0 || fork_threshold_ < 0)
            throw std::runtime_error("bad params");
        reducers_.assign(static_cast<size_t>(n_nodes_) * threads_, 0.0);
        send_posts_.assign(static_cast<size_t>(n_nodes_) * threads_, 0.0);
        nic_out_.assign(n_nodes_, 0.0);
        nic_in_.assign(n_nodes_, 0.0);
        recv_posts_.assign(static_cast<size_t>(n_nodes_) * threads_, 0.0);
        Expect(in, "flow");
        buffer_ = Next<uint64_t>(in, "buffer bytes");
        vcs_ = Next<uint32_t>(in, "virtual channels");
        const auto scheme = Next<std::string>(in, "virtual channel scheme");
        credit_delay_ = Next<double>(in, "credit delay");
        if (scheme == "none") vc_scheme_ = VcScheme::kNone;
        else if (scheme == "hops") vc_scheme_ = VcScheme::kHops;
        else if (scheme == "dateline") vc_scheme_ = VcScheme::kDateline;
        else if (scheme == "duato") vc_scheme_ = VcScheme::kDuato;
        else throw std::runtime_error("unknown virtual channel scheme " + scheme);
        if (vcs_ < 1 || (vc_scheme_ == VcScheme::kDateline && vcs_ < 2) ||
            (vc_scheme_ == VcScheme::kDuato && (vcs_ < 3 || shape_.empty())) || credit_delay_ < 0 ||
            (buffer_ > 0 && buffer_ < packet_size_ + header_))
            throw std::runtime_error("bad flow control");
        Expect(in, "transfers");
        const auto n_transfers = Next<uint32_t>(in, "transfer count");
        steps_ = Next<uint32_t>(in, "step count");
        transfers_.resize(n_transfers);
        for (auto& tr : transfers_) {
            tr.step = Next<uint32_t>(in, "step");
            tr.src = Next<uint32_t>(in, "source rank");
            tr.dst = Next<uint32_t>(in, "destination rank");
            tr.bytes = Next<uint64_t>(in, "bytes");
            tr.reduce = Next<int>(in, "reduce flag") != 0;
            tr.route.resize(Next<uint32_t>(in, "route length"));
            for (auto& l : tr.route) {
                l = Next<uint32_t>(in, "route link");
                if (l >= n_links) throw std::runtime_error("route link out of range");
            }
            if (tr.step >= steps_ || tr.src >= n_compute_ || tr.dst >= n_compute_)
                throw std::runtime_error("transfer out of range");
            uint32_t at = tr.src;  // a source route must be a path from src to dst
            for (uint32_t l : tr.route) {
                if (link_src_[l] != at) throw std::runtime_error("a source route is not a path from its source");
                at = link_dst_[l];
            }
            if (!tr.route.empty() && at != tr.dst)
                throw std::runtime_error("a source route does not end at its destination");
            if (!tr.route.empty() && vc_scheme_ == VcScheme::kDuato)
                throw std::runtime_error("the duato scheme needs adaptive routes");
            tr.packets = static_cast<uint32_t>(std::max<uint64_t>(1, (tr.bytes + packet_size_ - 1) / packet_size_));
        }
        // per rank, per step: the transfers it takes part in and how many of them are unfinished
        by_rank_step_.assign(static_cast<size_t>(n_compute_) * steps_, {});
        pending_.assign(static_cast<size_t>(n_compute_) * steps_, 0);
        for (uint32_t i = 0; i < n_transfers; ++i) {
            const auto& tr = transfers_[i];
            by_rank_step_[Slot(tr.src, tr.step)].push_back(i);
            ++pending_[Slot(tr.src, tr.step)];
            if (tr.dst != tr.src) {
                by_rank_step_[Slot(tr.dst, tr.step)].push_back(i);
                ++pending_[Slot(tr.dst, tr.step)];
            }
        }
        cur_.assign(n_compute_, 0);
        finish_.assign(n_compute_, 0.0);
        step_end_.assign(static_cast<size_t>(n_compute_) * steps_, 0.0);
    }

    size_t Slot(uint32_t rank, uint32_t step) const { return static_cast<size_t>(rank) * steps_ + step; }

    // -- the network -------------------------------------------------------------------------------------------
    void BuildNetwork() {
        nodes_.Create(n_nodes_);
        out_links_.assign(n_nodes_, {});
        tx_.resize(link_src_.size());
        link_bytes_.assign(link_src_.size(), 0);
        const QueueSize deep(QueueSizeUnit::PACKETS, std::numeric_limits<uint32_t>::max());
        for (uint32_t l = 0; l < link_src_.size(); ++l) {
            auto channel = CreateObject<PointToPointChannel>();
            channel->SetAttribute("Delay", TimeValue(Seconds(link_lat_[l])));
            Ptr<PointToPointNetDevice> ends[2];
            for (int side = 0; side < 2; ++side) {
                ends[side] = CreateObject<PointToPointNetDevice>();
                ends[side]->SetAddress(Mac48Address::Allocate());
                ends[side]->SetDataRate(DataRate(static_cast<uint64_t>(std::llround(link_bw_[l] * 8.0))));
                auto queue = CreateObject<DropTailQueue<Packet>>();
                queue->SetMaxSize(deep);
                ends[side]->SetQueue(queue);
                nodes_.Get(side == 0 ? link_src_[l] : link_dst_[l])->AddDevice(ends[side]);
                ends[side]->Attach(channel);
                ends[side]->TraceConnectWithoutContext("MacTxDrop", MakeCallback(&Engine::Dropped, this));
                queue->TraceConnectWithoutContext("Drop", MakeCallback(&Engine::Dropped, this));
            }
            ends[1]->SetReceiveCallback(MakeBoundCallback(&Engine::OnReceive, this, link_dst_[l]));
            ends[0]->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&Engine::OnSent, this, l));
            if (cut_through_)
                ends[0]->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&Engine::OnTxBegin, this, l));
            tx_[l] = ends[0];
            out_links_[link_src_[l]].push_back(l);
        }
        rr_.assign(n_nodes_, 0);
        reserved_.assign(link_src_.size(), 0);
        waiting_bytes_.assign(link_src_.size(), 0);
        credits_.assign(link_src_.size() * vcs_, buffer_);
        waiting_.assign(link_src_.size() * vcs_, {});
        undecided_.assign(n_nodes_, {});
        inputs_.assign(link_src_.size() * vcs_, {});
        crossbar_.assign(link_src_.size(), 0.0);
        port_load_.assign(link_src_.size(), 0);
        undecided_bytes_.assign(n_nodes_, 0);
        active_.assign(n_nodes_, {});
        if (eager_ >= 0 ||  // rendezvous messages route adaptively
            std::any_of(transfers_.begin(), transfers_.end(), [](const Transfer& t) { return t.route.empty(); }))
            Distances();
    }

    // hop distances to every compute node (a BFS on the reversed links from each), for minimal adaptive routing
    void Distances() {
        std::vector<std::vector<uint32_t>> in_links(n_nodes_);
        for (uint32_t l = 0; l < link_src_.size(); ++l) in_links[link_dst_[l]].push_back(l);
        dist_.assign(static_cast<size_t>(n_compute_) * n_nodes_, std::numeric_limits<uint32_t>::max());
        for (uint32_t d = 0; d < n_compute_; ++d) {
            uint32_t* dist = &dist_[static_cast<size_t>(d) * n_nodes_];
            std::queue<uint32_t> frontier;
            dist[d] = 0;
            frontier.push(d);
            while (!frontier.empty()) {
                const uint32_t v = frontier.front();
                frontier.pop();
                for (uint32_t l : in_links[v])
                    if (dist[link_src_[l]] == std::numeric_limits<uint32_t>::max()) {
                        dist[link_src_[l]] = dist[v] + 1;
                        frontier.push(link_src_[l]);
                    }
            }
        }
    }

    // -- forwarding --------------------------------------------------------------------------------------------
    uint32_t NextLink(uint32_t node, const Transfer& tr, uint32_t hop) {
        if (!tr.route.empty()) {
            if (hop >= tr.route.size() || link_src_[tr.route[hop]] != node)
                throw std::runtime_error("a source route does not continue from node " + std::to_string(node));
            return tr.route[hop];
        }
        return Adaptive(node, tr.dst);
    }

    // the least loaded minimal next hop from `node` towards `dst`; there is always one on a connected network
    uint32_t Adaptive(uint32_t node, uint32_t dst) {
        const uint32_t l = LeastLoaded(node, dst, false);
        if (l == UINT32_MAX) throw std::runtime_error("no minimal next hop from node " + std::to_string(node));
        return l;
    }

    // Minimal adaptive routing: of the out-links of `node` on a shortest path to `dst` (with `window`, a source's
    // pass over its transfers: only those holding fewer than Window() packets, their loads as the pass keeps them
    // in port_load_), the one with the fewest bytes queued or inside the router's pipeline; ties go to the tied
    // links in turn. UINT32_MAX when there is none.
    uint32_t LeastLoaded(uint32_t node, uint32_t dst, bool window) {
        uint64_t best = UINT64_MAX;
        tied_.clear();
        for (uint32_t l : out_links_[node]) {
            if (!Minimal(node, dst, l)) continue;
            const uint64_t load = window ? port_load_[l] : Load(l);
            if (window && load >= Window(l)) continue;
            if (load < best) {
                best = load;
                tied_.clear();
            }
            if (load == best) tied_.push_back(l);
        }
        return tied_.empty() ? UINT32_MAX : tied_[std::uniform_int_distribution<size_t>(0, tied_.size() - 1)(rng_)];
    }

    // trampolines: ns-3 binds leading arguments of free functions only
    static bool OnReceive(Engine* engine, uint32_t node, Ptr<NetDevice>, Ptr<const Packet> packet, uint16_t,
                          const Address&) {
        engine->Received(node, packet);
        return true;
    }
    static void OnSent(Engine* engine, uint32_t link, Ptr<const Packet> packet) { engine->Sent(link, packet); }
    static void OnTxBegin(Engine* engine, uint32_t link, Ptr<const Packet> packet) { engine->TxBegin(link, packet); }

    // cut-through: the next router has the header `latency + header / bandwidth` after the first bit left
    void TxBegin(uint32_t link, Ptr<const Packet> packet) {
        const auto it = tags_.find(packet->GetUid());
        if (it == tags_.end() || link_dst_[link] == Target(it->second)) return;
        Ptr<Packet> p = packet->Copy();
        PppHeader ppp;
        p->RemoveHeader(ppp);
        const double header_time = static_cast<double>(header_) / link_bw_[link];
        Simulator::Schedule(Seconds(link_lat_[link] + header_time), &Engine::Arrived, this, link_dst_[link], p);
    }

    void Received(uint32_t node, Ptr<const Packet> packet) {
        if (cut_through_ && node != Target(TagOf(packet))) return;  // passed on when its header arrived
        Arrived(node, packet->Copy());
    }

    void Arrived(uint32_t node, Ptr<Packet> p) {
        ++events_;
        const TransferTag& tag = TagOf(p);
        const bool buffered = buffer_ != 0 && tag.link != UINT32_MAX;
        if (buffered) inputs_[tag.link * vcs_ + tag.vc].push_back(p->GetUid());  // its input buffer's order
        if (node == Target(tag)) {  // out of the network once it heads its input buffer
            if (buffered && inputs_[tag.link * vcs_ + tag.vc].front() != p->GetUid())
                return static_cast<void>(parked_.emplace(p->GetUid(), Parked{p, UINT32_MAX, 0}));
            return Deliver(node, p);
        }
        // the route is computed as the packet enters the router's pipeline; its tag counts the hop when it is
        // transmitted
        TransferTag next = tag;
        ++next.hop;
        const uint32_t l = tag.kind == kData ? NextLink(node, transfers_[tag.transfer], next.hop)
                                             : ControlLink(node, tag);
        // cut-through sends no byte before it has arrived: from a slower link onto a faster one, the packet goes
        // out no earlier than its tail's arrival less its own time on the link out (equal links: no wait)
        double wait = 0;
        if (cut_through_ && tag.link != UINT32_MAX) {
            const double wire = static_cast<double>(Wire(p));
            wait = std::max(0.0, (wire - static_cast<double>(header_)) / link_bw_[tag.link] - wire / link_bw_[l]);
        }
        Route(l, next, p, wait);
    }

    // a packet taken by its target's NIC: its buffer's credit goes back; a handshake message answered, or data
    // counted
    void Eject(uint32_t node, Ptr<Packet> p) {
        const auto it = tags_.find(p->GetUid());
        const TransferTag tag = it->second;
        tags_.erase(it);  // nothing of the packet is left in the network
        Transfer& tr = transfers_[tag.transfer];
        Leave(tag);
        ReturnCredit(tag.link, tag.vc, Wire(p));
        if (tag.kind != kData) {  // each message of the handshake, and then the data, leaves alpha later
            if (tag.kind == kRequest)
                Simulator::Schedule(Seconds(alpha_), &Engine::Control, this, tag.transfer, kReply);
            else
                Simulator::Schedule(Seconds(alpha_), &Engine::Inject, this, tag.transfer);
            return;
        }
        if (--tr.left_to_arrive == 0) {
            const double now = Simulator::Now().GetSeconds();
            const double done = tr.reduce ? Reduce(node, ReductionWork(tr.bytes), now) : now;
            Simulator::Schedule(Seconds(done - now), &Engine::Done, this, node, tr.step);
        }
    }

    const TransferTag& TagOf(Ptr<const Packet> p) const { return tags_.at(p->GetUid()); }

    // a packet's bytes on the wire: ns-3's device adds its 2-byte PPP header
    static uint64_t Wire(Ptr<const Packet> p) { return p->GetSize() + 2; }

    uint32_t Target(const TransferTag& tag) const {
        const Transfer& tr = transfers_[tag.transfer];
        return tag.kind == kReply ? tr.src : tr.dst;
    }

    // a rendezvous message's next hop: dimension order where the data follows source routes on a torus (so the
    // dateline keeps it deadlock-free), else minimal adaptive
    uint32_t ControlLink(uint32_t node, const TransferTag& tag) {
        if (!transfers_[tag.transfer].route.empty() && !shape_.empty()) return DorLink(node, Target(tag));
        return Adaptive(node, Target(tag));
    }

    // a rendezvous message (header bytes only) of transfer i from the rank that sends it, at once
    void Control(uint32_t i, uint32_t kind) {
        const Transfer& tr = transfers_[i];
        Ptr<Packet> p = Create<Packet>(static_cast<uint32_t>(header_ - 2));
        TransferTag tag;
        tag.transfer = i;
        tag.kind = kind;
        const uint32_t from = kind == kRequest ? tr.src : tr.dst;
        Launch(from, ControlLink(from, tag), tag, p);
    }

    // the virtual channel of the hop onto link l of a packet whose tag says where it was (see the header comment)
    uint32_t NextVc(const TransferTag& tag, uint32_t l) const {
        switch (vc_scheme_) {
            case VcScheme::kHops:
                return std::min(tag.hop, vcs_ - 1);
            case VcScheme::kDateline:
                return Crossed(tag, l);
            case VcScheme::kDuato:
                return kChoose;
            default:
                return 0;
        }
    }

    // whether a packet on link l has crossed the dateline of l's dimension (on l or before it in that dimension)
    uint32_t Crossed(const TransferTag& tag, uint32_t l) const {
        const bool same_dim = tag.link != UINT32_MAX && link_dim_[tag.link] == link_dim_[l];
        return (same_dim && tag.crossed) || link_wraps_[l] ? 1u : 0u;
    }

    // the dimension-order next hop from `node` towards `dst` (row-major coordinates over shape_), as the
    // models' dor routes: the first dimension in which they differ, dimension 0 first, the shorter way round
    // (ties "+"; one-way rings: the way that exists)
    uint32_t DorLink(uint32_t node, uint32_t dst) const {
        for (size_t i = 0; i < shape_.size(); ++i) {
            const uint32_t side = shape_[i];
            const uint32_t cu = node / stride_[i] % side, cd = dst / stride_[i] % side;
            if (cu == cd) continue;
            const uint32_t ahead = (cd + side - cu) % side;
            const int want = ahead <= side - ahead ? 1 : -1;
            uint32_t other = UINT32_MAX;
            for (uint32_t l : out_links_[node]) {
                if (link_dim_[l] != static_cast<int>(i)) continue;
                if (link_dir_[l] == want) return l;
                other = l;
            }
            if (other != UINT32_MAX) return other;
            break;
        }
        throw std::runtime_error("no dimension-order next hop from node " + std::to_string(node) + " to " +
                                 std::to_string(dst));
    }

    // Duato's choice for a packet at `node`: the least loaded minimal next hop with an adaptive channel whose
    // credits cover it (the channel with the most credits), else its dimension-order hop's escape channel if
    // that one's credits do; else it waits undecided at `node` for the first of them to free (Retry)
    void Choose(uint32_t node, Ptr<Packet> p) {
        const TransferTag& tag = TagOf(p);
        const uint32_t target = Target(tag);
        const uint64_t size = Wire(p);
        uint32_t best_l = UINT32_MAX, best_vc = 0;
        uint64_t best_load = UINT64_MAX, best_credits = 0;
        for (uint32_t l : out_links_[node]) {
            if (!Minimal(node, target, l)) continue;
            const uint64_t load = Load(l);
            for (uint32_t vc = 2; vc < vcs_; ++vc) {
                const uint64_t credits = credits_[l * vcs_ + vc];
                if (credits < size) continue;
                if (load < best_load || (load == best_load && credits > best_credits)) {
                    best_l = l, best_vc = vc, best_load = load, best_credits = credits;
                }
            }
        }
        if (best_l != UINT32_MAX) {
            ++adaptive_hops_;
            return Commit(best_l, best_vc, p, size);
        }
        const auto [l, vc] = Escape(node, tag);
        if (credits_[l * vcs_ + vc] >= size) {
            ++escape_hops_;
            return Commit(l, vc, p, size);
        }
        undecided_bytes_[node] += size;
        undecided_[node].push_back({p, target, l, vc, size});
    }

    // whether link l out of `node` is on a shortest path to `target`
    bool Minimal(uint32_t node, uint32_t target, uint32_t l) const {
        const uint32_t* dist = &dist_[static_cast<size_t>(target) * n_nodes_];
        return dist[link_dst_[l]] + 1 == dist[node];
    }

    // a packet's escape at `node`: its dimension-order next hop on the dateline channel
    std::pair<uint32_t, uint32_t> Escape(uint32_t node, const TransferTag& tag) const {
        const uint32_t l = DorLink(node, Target(tag));
        return {l, Crossed(tag, l)};
    }

    // credits for (l, vc) came back: the packets undecided at l's router that may take that channel (an adaptive
    // one on a minimal next hop, or their escape) do, oldest first, while its credits cover them
    void Retry(uint32_t l, uint32_t vc) {
        const uint32_t node = link_src_[l];
        auto& queue = undecided_[node];
        uint64_t& credits = credits_[l * vcs_ + vc];
        for (size_t k = 0; k < queue.size() && credits >= header_;) {
            const Undecided& u = queue[k];
            const bool fits = credits >= u.size && (vc >= 2 ? Minimal(node, u.target, l)
                                                            : u.escape_link == l && u.escape_vc == vc);
            if (!fits) {
                ++k;
                continue;
            }
            ++(vc >= 2 ? adaptive_hops_ : escape_hops_);
            Ptr<Packet> p = u.packet;
            const uint64_t size = u.size;
            queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(k));
            undecided_bytes_[node] -= size;
            credits -= size;
            Transmit(l, vc, p, size);
        }
    }

    // `bytes` that left a link at time `t` (s), into the timeline
    void Busy(double t, uint64_t bytes) {
        size_t i = static_cast<size_t>(t / bin_);
        while (i >= kBins) {
            for (size_t j = 0; j < kBins / 2; ++j) timeline_[j] = timeline_[2 * j] + timeline_[2 * j + 1];
            std::fill(timeline_.begin() + kBins / 2, timeline_.end(), 0);
            bin_ *= 2;
            i = static_cast<size_t>(t / bin_);
        }
        timeline_[i] += bytes;
    }

    void Sent(uint32_t link, Ptr<const Packet> packet) {
        link_bytes_[link] += packet->GetSize();
        Busy(Simulator::Now().GetSeconds(), packet->GetSize());
        const auto it = tags_.find(packet->GetUid());
        if (it == tags_.end()) return;
        const TransferTag& tag = it->second;
        Transfer& tr = transfers_[tag.transfer];
        if (link == tag.first && tag.kind == kData && --tr.left_to_send == 0) Done(tr.src, tr.step);
        if (!active_[link_src_[link]].empty()) Pump(link_src_[link]);
    }

    void Dropped(Ptr<const Packet>) { ++drops_; }

    // -- progress ----------------------------------------------------------------------------------------------
    void Start(uint32_t i) {
        Transfer& tr = transfers_[i];
        tr.started = true;
        if (tr.src == tr.dst) {  // a local copy or reduction: no packets
            const double now = Simulator::Now().GetSeconds();
            const double done = tr.reduce ? Reduce(tr.src, ReductionWork(tr.bytes), now + alpha_)
                                          : now + alpha_;
            Simulator::Schedule(Seconds(done - now), &Engine::Done, this, tr.src, tr.step);
            return;
        }
        tr.left_to_send = tr.left_to_arrive = tr.packets;
        // both ranks post the message (LogGP's o, on their first free thread), then it leaves alpha later: as
        // data, or above the eager threshold as a rendezvous request whose reply clears the data
        const double now = Simulator::Now().GetSeconds();
        const double posted = std::max(Post(send_posts_, tr.src, now), Post(recv_posts_, tr.dst, now));
        const bool rendezvous = eager_ >= 0 && static_cast<double>(tr.bytes) > eager_;
        if (rendezvous) Simulator::Schedule(Seconds(posted - now + alpha_), &Engine::Control, this, i, kRequest);
        else Simulator::Schedule(Seconds(posted - now + alpha_), &Engine::Inject, this, i);
    }

    // a message's posting (`overhead_` s) on the rank's first free thread from `ready` on; returns its end. Sends
    // and receives are posted apart, as the models count them (the larger of a rank's sends and receives).
    double Post(std::vector<double>& posters, uint32_t rank, double ready) {
        return overhead_ == 0 ? ready : OnFirstFreeThread(posters, rank, ready, overhead_);
    }

    // A source interleaves its active transfers packet by packet, round-robin, as a NIC arbitrates between its
    // queue pairs: a transfer's next packet goes out when a port it may use holds fewer than `window` packets
    // (queued, or inside the router's per-hop pipeline), enough to keep the link busy back to back.
    void Inject(uint32_t i) {
        Transfer& tr = transfers_[i];
        tr.left_to_inject = tr.bytes;
        tr.packets_to_inject = tr.packets;
        packets_ += tr.packets;
        active_[tr.src].push_back(i);
        Pump(tr.src);
    }

    // bytes a port may hold (queued or inside the router's pipeline) and still take a packet from the NIC: the
    // router pipeline's bandwidth-delay product plus two full packets, so the link never idles for want of one
    uint64_t Window(uint32_t l) const {
        return 2 * (packet_size_ + header_) + static_cast<uint64_t>(std::ceil(per_hop_ * link_bw_[l]));
    }

    // bytes bound for link l and not yet on it: queued, in the pipeline, waiting for its credits, or undecided at
    // its router (those may take any of its links)
    uint64_t Load(uint32_t l) const {
        return tx_[l]->GetQueue()->GetNBytes() + reserved_[l] + waiting_bytes_[l] + undecided_bytes_[link_src_[l]];
    }

    // the port transfer i's next packet may take now, or UINT32_MAX when every port it may use is full
    uint32_t SourcePort(uint32_t node, const Transfer& tr) {
        if (!tr.route.empty()) {
            const uint32_t l = tr.route[0];
            return port_load_[l] < Window(l) ? l : UINT32_MAX;
        }
        return LeastLoaded(node, tr.dst, true);
    }

    // Round-robin: a transfer that sent a packet goes behind the others; one that could not keeps its place.
    void Pump(uint32_t node) {
        auto& active = active_[node];
        // the ports' loads, read once a pass and updated as its packets go (nothing else moves meanwhile), and how
        // many can still take a packet: with none, no transfer can send (the rest of the pass keeps its order)
        size_t open = 0;
        const auto count_open = [&] {
            open = 0;
            for (uint32_t l : out_links_[node]) open += (port_load_[l] = Load(l)) < Window(l);
            return open > 0;
        };
        for (bool progress = true; progress && !active.empty() && count_open();) {
            progress = false;
            auto& blocked = pump_blocked_;
            auto& served = pump_served_;
            blocked.clear();
            served.clear();
            size_t k = 0;
            for (; k < active.size() && open > 0; ++k) {
                const uint32_t i = active[k];
                Transfer& tr = transfers_[i];
                const uint32_t l = SourcePort(node, tr);
                if (l == UINT32_MAX) {
                    blocked.push_back(i);
                    continue;
                }
                Emit(i, l);
                const bool was_open = port_load_[l] < Window(l);
                port_load_[l] = Load(l);
                open -= was_open && port_load_[l] >= Window(l);
                progress = true;
                if (tr.packets_to_inject > 0) served.push_back(i);
            }
            blocked.insert(blocked.end(), active.begin() + static_cast<std::ptrdiff_t>(k), active.end());
            blocked.insert(blocked.end(), served.begin(), served.end());
            active.assign(blocked.begin(), blocked.end());
        }
    }

    void Emit(uint32_t i, uint32_t l) {
        Transfer& tr = transfers_[i];
        const uint64_t payload = std::min(tr.left_to_inject, packet_size_);
        tr.left_to_inject -= payload;
        --tr.packets_to_inject;
        // ns-3's device adds its 2-byte PPP header: the rest of the header travels as payload bytes
        Ptr<Packet> p = Create<Packet>(static_cast<uint32_t>(payload + header_ - 2));
        TransferTag tag;
        tag.transfer = i;
        Launch(tr.src, l, tag, p);
    }

    // a new packet from `node`'s NIC onto link l: through the NIC, then the router's pipeline
    void Launch(uint32_t node, uint32_t l, const TransferTag& tag, Ptr<Packet> p) {
        tags_.emplace(p->GetUid(), tag);
        Route(l, tag, p, injection_ == 0 ? 0 : NicDelay(nic_out_, node, p));
    }

    // packet p, whose hop `tag` describes, bound for link l: it enters the router's pipeline `delay` s from now
    // and joins l's queue `per_hop` after that
    void Route(uint32_t l, const TransferTag& tag, Ptr<Packet> p, double delay) {
        reserved_[l] += Wire(p);
        Simulator::Schedule(Seconds(delay + per_hop_), &Engine::Enqueue, this, l, NextVc(tag, l), p);
    }

    // seconds from now until packet p has passed the NIC (`nic`: its way out or in) of `node`, at the host's
    // rate after the packets before it
    double NicDelay(std::vector<double>& nic, uint32_t node, Ptr<Packet> p) {
        const double now = Simulator::Now().GetSeconds();
        return Occupy(nic[node], now, static_cast<double>(Wire(p)) / injection_) - now;
    }

    // a packet out of the router's pipeline, bound for link l on channel vc: onto the link, or behind the packets
    // waiting for that channel's credits
    void Enqueue(uint32_t l, uint32_t vc, Ptr<Packet> p) {
        const uint64_t size = Wire(p);
        reserved_[l] -= size;
        const TransferTag& tag = TagOf(p);
        if (buffer_ != 0 && tag.link != UINT32_MAX && inputs_[tag.link * vcs_ + tag.vc].front() != p->GetUid()) {
            parked_.emplace(p->GetUid(), Parked{p, l, vc});  // behind the head of its input buffer: it waits
            waiting_bytes_[l] += size;
            return;
        }
        Allocate(l, vc, p);
    }

    // the head of its input buffer parked behind the packet that just left: it now bids for its channel
    void Unpark(uint64_t uid) {
        const auto it = parked_.find(uid);
        if (it == parked_.end()) return;  // still in the router's pipeline: Enqueue will find it the head
        const Parked park = it->second;
        parked_.erase(it);
        if (park.link == UINT32_MAX) return Deliver(link_dst_[TagOf(park.packet).link], park.packet);
        waiting_bytes_[park.link] -= Wire(park.packet);
        Allocate(park.link, park.vc, park.packet);
    }

    // a packet leaves the input buffer it arrived in (`tag` says which): the next one heads it
    void Leave(const TransferTag& tag) {
        if (buffer_ == 0 || tag.link == UINT32_MAX) return;
        auto& order = inputs_[tag.link * vcs_ + tag.vc];
        order.pop_front();
        if (!order.empty() && parked_.count(order.front()))
            Simulator::ScheduleNow(&Engine::Unpark, this, order.front());
    }

    // a packet at its target: through the NIC at the host's rate, one packet after the other, then out
    void Deliver(uint32_t node, Ptr<Packet> p) {
        if (injection_ == 0) return Eject(node, p);
        Simulator::Schedule(Seconds(NicDelay(nic_in_, node, p)), &Engine::Eject, this, node, p);
    }

    // a packet at the head of its input buffer (or from the source's NIC), bound for link l on channel vc (or
    // Duato's choice): onto the link, or behind the packets waiting for that channel's credits
    void Allocate(uint32_t l, uint32_t vc, Ptr<Packet> p) {
        if (vc == kChoose) return Choose(link_src_[l], p);
        Commit(l, vc, p, Wire(p));
    }

    // packet p (`size` wire bytes) bound for link l on channel vc: onto the link, or behind the packets waiting
    // for that channel's credits
    void Commit(uint32_t l, uint32_t vc, Ptr<Packet> p, uint64_t size) {
        if (buffer_ == 0) return Transmit(l, vc, p, size);
        waiting_[l * vcs_ + vc].push_back(p);
        waiting_bytes_[l] += size;
        Drain(l, vc);
    }

    // send the packets waiting for (l, vc) that its credits cover, in order
    void Drain(uint32_t l, uint32_t vc) {
        auto& queue = waiting_[l * vcs_ + vc];
        uint64_t& credits = credits_[l * vcs_ + vc];
        while (!queue.empty()) {
            Ptr<Packet> p = queue.front();
            const uint64_t size = Wire(p);
            if (credits < size) break;
            queue.pop_front();
            credits -= size;
            waiting_bytes_[l] -= size;
            Transmit(l, vc, p, size);
        }
    }

    // onto link l's output queue (size: its wire bytes): the buffer the packet leaves is freed (its credit goes
    // upstream); its tag records the hop (counted from 0 at the source)
    void Transmit(uint32_t l, uint32_t vc, Ptr<Packet> p, uint64_t size) {
        TransferTag& tag = tags_.at(p->GetUid());
        Leave(tag);
        // the crossbar takes one packet at a time from an input, at the input link's rate (no speedup): s until
        // this one starts through it
        double cross = 0;
        if (buffer_ != 0 && tag.link != UINT32_MAX) {
            const double now = Simulator::Now().GetSeconds(), pass = static_cast<double>(size) / link_bw_[tag.link];
            cross = Occupy(crossbar_[tag.link], now, pass) - pass - now;
        }
        ReturnCredit(tag.link, tag.vc, size, cross);
        if (tag.link != UINT32_MAX) ++tag.hop;
        else tag.first = l;
        tag.crossed = Crossed(tag, l);
        tag.link = l;
        tag.vc = vc;
        if (cross <= 0) return Send(l, p);
        reserved_[l] += size;  // bound for l, not yet in its queue
        Simulator::Schedule(Seconds(cross), &Engine::Through, this, l, p);
    }

    // a packet through the crossbar onto link l's output queue
    void Through(uint32_t l, Ptr<Packet> p) {
        reserved_[l] -= Wire(p);
        Send(l, p);
    }

    void Send(uint32_t l, Ptr<Packet> p) {
        if (!tx_[l]->Send(p, broadcast_, 0x0800)) Dropped(p);
    }

    // the credit of a buffer a packet leaves `after` s from now goes back upstream
    void ReturnCredit(uint32_t l, uint32_t vc, uint64_t size, double after = 0) {
        if (buffer_ == 0 || l == UINT32_MAX) return;
        Simulator::Schedule(Seconds(after + link_lat_[l] + credit_delay_), &Engine::Credit, this, l, vc, size);
    }

    void Credit(uint32_t l, uint32_t vc, uint64_t size) {
        ++events_;
        credits_[l * vcs_ + vc] += size;
        Drain(l, vc);
        if (!undecided_[link_src_[l]].empty()) Retry(l, vc);
        if (!active_[link_src_[l]].empty()) Pump(link_src_[l]);
    }

    // One line naming a cycle of full buffers: each waiting packet holds the buffer (link, channel) it arrived in
    // and waits for the one it is bound for; a cycle of such waits never clears.
    std::string Deadlock() const {
        const size_t n = waiting_.size();
        std::vector<std::vector<size_t>> waits(n);  // channel held -> channels its packets wait for
        for (size_t c = 0; c < n; ++c)
            for (const auto& p : waiting_[c]) {
                const TransferTag& tag = TagOf(p);
                if (tag.link != UINT32_MAX) waits[static_cast<size_t>(tag.link) * vcs_ + tag.vc].push_back(c);
            }
        for (const auto& queue : undecided_)  // waiting for any channel, the escape included
            for (const Undecided& u : queue) {
                const TransferTag& tag = TagOf(u.packet);
                if (tag.link != UINT32_MAX)
                    waits[static_cast<size_t>(tag.link) * vcs_ + tag.vc].push_back(u.escape_link * vcs_ + u.escape_vc);
            }
        std::vector<int> state(n, 0);  // 0 unseen, 1 on the path, 2 done
        std::vector<size_t> path;
        std::vector<size_t> cycle;
        std::function<bool(size_t)> visit = [&](size_t c) {
            state[c] = 1;
            path.push_back(c);
            for (size_t d : waits[c]) {
                if (state[d] == 1) {
                    cycle.assign(std::find(path.begin(), path.end(), d), path.end());
                    return true;
                }
                if (state[d] == 0 && visit(d)) return true;
            }
            path.pop_back();
            state[c] = 2;
            return false;
        };
        for (size_t c = 0; c < n && cycle.empty(); ++c)
            if (state[c] == 0 && !waits[c].empty()) visit(c);
        size_t packets = 0;
        for (const auto& q : waiting_) packets += q.size();
        for (const auto& q : undecided_) packets += q.size();
        std::string text = "deadlock: " + std::to_string(packets) + " packets wait for credits that never return";
        if (cycle.empty()) return text + " (no cycle of buffers found)";
        text += "; a cycle of full buffers (link src->dst, virtual channel):";
        cycle.push_back(cycle.front());
        for (size_t k = 0; k < cycle.size(); ++k) {
            const size_t l = cycle[k] / vcs_;
            text += (k ? " -> " : " ") + std::to_string(link_src_[l]) + "->" + std::to_string(link_dst_[l]) +
                    " vc " + std::to_string(cycle[k] % vcs_);
        }
        return text;
    }

    // rank `rank` finished one of its transfers of step `step`
    // a reduction of `work` seconds that can start at `ready` runs on the rank's first free thread (the
    // implementation's threads: its reductions of a step share them); returns when it ends
    double Reduce(uint32_t rank, double work, double ready) { return OnFirstFreeThread(reducers_, rank, ready, work); }

    // seconds a reduction of `bytes` takes on one thread: gamma per byte, and the per-reduction cost of a rank that
    // reduces on its only thread (0 otherwise) for one over the threshold
    double ReductionWork(uint64_t bytes) const {
        const double b = static_cast<double>(bytes);
        return gamma_ * b + (b > fork_threshold_ ? fork_ : 0.0);
    }

    // `work` seconds on the first free of `rank`'s threads (`threads`: when each is free) from `ready` on; returns
    // when it ends
    double OnFirstFreeThread(std::vector<double>& threads, uint32_t rank, double ready, double work) const {
        double* first = &threads[static_cast<size_t>(rank) * threads_];
        return Occupy(*std::min_element(first, first + threads_), ready, work);
    }

    // one resource used in turn (a thread, a NIC): free at `free`, busy `work` s from `ready` on; returns the end
    static double Occupy(double& free, double ready, double work) {
        free = std::max(free, ready) + work;
        return free;
    }

    void Done(uint32_t rank, uint32_t step) {
        ++events_;
        if (--pending_[Slot(rank, step)] == 0 && step == cur_[rank]) Advance(rank);
    }

    // move `rank` past every finished step, then start the transfers of its current step both ends are ready for
    void Advance(uint32_t rank) {
        const double now = Simulator::Now().GetSeconds();
        while (cur_[rank] < steps_ && pending_[Slot(rank, cur_[rank])] == 0) {
            step_end_[Slot(rank, cur_[rank])] = now;
            ++cur_[rank];
        }
        finish_[rank] = now;
        if (cur_[rank] == steps_) return;
        for (uint32_t i : by_rank_step_[Slot(rank, cur_[rank])]) {
            Transfer& tr = transfers_[i];
            const uint32_t other = tr.src == rank ? tr.dst : tr.src;
            if (!tr.started && cur_[other] == tr.step) Start(i);
        }
    }

    uint32_t n_nodes_ = 0, n_compute_ = 0, steps_ = 0;
    std::vector<uint32_t> link_src_, link_dst_;
    std::vector<double> link_bw_, link_lat_;
    std::vector<int> link_dim_;
    std::vector<bool> link_wraps_;
    std::vector<int> link_dir_;     // +1 / -1: the way a torus link moves along its dimension; 0: not a torus
    std::vector<uint32_t> shape_;   // the torus's sides (row-major node ids); empty: no coordinates
    std::vector<uint32_t> stride_;  // node-id stride of each dimension of shape_
    uint64_t buffer_ = 0;  // bytes per input buffer and virtual channel; 0: unbounded, no flow control
    uint32_t vcs_ = 1;
    VcScheme vc_scheme_ = VcScheme::kNone;
    double credit_delay_ = 0;
    std::vector<uint64_t> credits_;               // per link and channel: bytes free in the far end's buffer
    std::vector<std::deque<Ptr<Packet>>> waiting_;  // per link and channel: packets waiting for its credits
    std::vector<uint64_t> waiting_bytes_;         // per link: their wire bytes
    // a packet that found none of its channels free (Duato's): what a retry checks
    struct Undecided {
        Ptr<Packet> packet;
        uint32_t target, escape_link, escape_vc;
        uint64_t size;
    };
    std::vector<std::deque<Undecided>> undecided_;  // per node: packets waiting for any of their channels to free
    std::vector<uint64_t> undecided_bytes_;         // per node: their wire bytes
    std::vector<std::deque<uint64_t>> inputs_;  // per link and channel: the packets in its far end's buffer, in order
    struct Parked {  // a packet out of the router's pipeline behind the head of its input buffer
        Ptr<Packet> packet;
        uint32_t link, vc;
    };
    std::unordered_map<uint64_t, Parked> parked_;
    std::vector<double> crossbar_;  // per link: when its far end's crossbar input is free
    std::vector<uint64_t> port_load_;  // per link: its Load() as a source's pass over its transfers last read it
    std::vector<uint32_t> pump_blocked_, pump_served_;  // the pass's scratch (kept: no allocation per pass)
    uint64_t packet_size_ = 0, header_ = 2;
    bool cut_through_ = false;
    double per_hop_ = 0, alpha_ = 0, gamma_ = 0, fork_ = 0, fork_threshold_ = 0;
    uint32_t threads_ = 1;
    std::vector<double> reducers_;  // per rank and thread: when the thread is free
    std::vector<double> send_posts_, recv_posts_;  // per rank and thread: when it is done posting sends, receives
    double eager_ = -1;             // bytes above which a message takes a rendezvous; < 0: every message eager
    double overhead_ = 0;           // s of a thread per message posted (LogGP's o)
    double injection_ = 0;          // bytes/s through a rank's NIC, each way; 0: no limit beyond the links
    std::vector<double> nic_out_, nic_in_;  // per node: when its NIC is done injecting, ejecting
    std::vector<Transfer> transfers_;
    std::vector<std::vector<uint32_t>> by_rank_step_;
    std::vector<uint32_t> pending_, cur_;
    std::vector<double> finish_, step_end_;

    NodeContainer nodes_;
    std::vector<Ptr<PointToPointNetDevice>> tx_;
    const Address broadcast_ = Mac48Address::GetBroadcast();  // a point-to-point device's every destination
    std::vector<std::vector<uint32_t>> out_links_;
    std::vector<uint32_t> dist_, rr_, tied_;
    std::vector<uint64_t> reserved_;  // per link: wire bytes inside the router's pipeline, bound for its queue
    std::mt19937_64 rng_{1};  // tie-breaks among equally loaded links: seeded, so runs repeat
    std::vector<std::deque<uint32_t>> active_;
    std::vector<uint64_t> link_bytes_;
    uint64_t drops_ = 0, events_ = 0, packets_ = 0;
    uint64_t adaptive_hops_ = 0, escape_hops_ = 0;  // Duato's choices: an adaptive channel, else the escape
    // bytes sent over all links per time bin of bin_ s: kBins bins, each pair merged (bin_ doubled) when a packet
    // ends past the last, so a run of any length keeps between kBins / 2 and kBins bins (wide enough that they do
    // not alias the packets' period)
    static constexpr size_t kBins = 64;
    std::vector<uint64_t> timeline_ = std::vector<uint64_t>(kBins, 0);
    double bin_ = 1e-9;
    std::unordered_map<uint64_t, TransferTag> tags_;  // packet uid -> where it is (its copies share the uid)
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: " << argv[0] << " INPUT OUTPUT\n";
        return 2;
    }
    Time::SetResolution(Time::PS);
    // a binary heap of events (std::priority_queue) instead of ns-3's default std::map: the same order (time,
    // then insertion), 5 % fewer instructions on torus:8x4 and about a quarter less CPU on torus:4x4x4, where
    // more events wait at once
    ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::PriorityQueueScheduler");
    Simulator::SetScheduler(scheduler);
    try {
        std::ifstream in(argv[1]);
        if (!in) throw std::runtime_error(std::string("cannot read ") + argv[1]);
        Engine engine(in);
        engine.Run();
        std::ofstream out(argv[2]);
        engine.Write(out);
        if (!out) throw std::runtime_error(std::string("cannot write ") + argv[2]);
    } catch (const std::exception& exc) {
        std::cerr << "directcoll packet engine: " << exc.what() << "\n";
        return 1;
    }
    return 0;
}
