/*
 * stepring.h - the step backend's shared-memory ring file, written by the in-process agent
 * (agent/agent.c, LD_PRELOAD) and drained by dcpid (core/capture/stepdrain.c). Header-only so that
 * the agent, which links nothing of libdcpi, shares the exact layout.
 *
 * One file per process image: "<prefix>.<pid>.<gen>" where <prefix> is the value of
 * DCPI_AGENT_RING (e.g. /dev/shm/dcpi-step-<dcpid pid>) and <gen> the first free number
 * (0, then 1 after an exec that kept the environment, ...). The file holds a header, nslots
 * per-thread slots and, per slot, a ring of nrecords step records. Each ring has one producer
 * (the thread itself, from its signal handlers) and one consumer (dcpid): head and tail are
 * monotonic 64-bit counters, the producer publishes a record with a release store of head,
 * the consumer frees it with a release store of tail. A ring without room for a whole burst
 * makes the agent skip that burst and count it in lost_bursts: the program never waits.
 *
 * A record is one executed instruction: the registers before and after it (perf's register
 * order, DCPI_REG_* of core/capture/capture.h: 24 entries, segment entries 0 except FS = fs base),
 * 16 bytes read at the pc, and, when the agent could decode the instruction, the effective
 * address of its first memory operand and the memory there before (for reads) and after (for
 * writes) the instruction, read with process_vm_readv (never faults).
 */
#ifndef DCPI_CORE_STEPRING_H
#define DCPI_CORE_STEPRING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define STEP_RING_MAGIC 0x54534344u /* "DCST" little-endian */
/* 2: the arm mode (its table, counters, hit records); 3: a table of 16 targets; 4: an arm takes
 * up to DCPI_AGENT_HITS executions, each hit record says its arm and its place in it; 5: the
 * gaps between an arm's hits */
#define STEP_RING_VERSION  5u
#define STEP_NREGS         24 /* perf's x86-64 user register order */
#define STEP_RING_ENV      "DCPI_AGENT_RING"
#define STEP_RATE_ENV      "DCPI_AGENT_RATE"      /* bursts per second of thread CPU time (100) */
#define STEP_BURST_ENV     "DCPI_AGENT_BURST"     /* instructions per burst (16) */
#define STEP_SIGNAL_ENV    "DCPI_AGENT_SIGNAL"    /* timer signal as SIGRTMIN+N (auto) */
#define STEP_MODE_ENV      "DCPI_AGENT_MODE"      /* "arm": breakpoint arms (below), else bursts */
#define STEP_BPS_ENV       "DCPI_AGENT_BPS"       /* arm mode: breakpoints per thread (4) */
#define STEP_WINDOW_ENV    "DCPI_AGENT_WINDOW_US" /* arm mode: an arm's wait (STEP_ARM_WINDOW_US) */
#define STEP_ARM_WINDOW_US 100 /* us of the thread's CPU an arm waits for its hit; 0: a tick */
#define STEP_HITS_ENV      "DCPI_AGENT_HITS" /* arm mode: executions an arm takes (STEP_ARM_HITS) */
#define STEP_ARM_HITS      64 /* an arm's breakpoint stays on for this many executions at most */
#define STEP_ARM_HITS_MAX  64 /* core/values/cluster.c counts up to 64 values a cluster */
#define STEP_DEF_SLOTS     32
#define STEP_DEF_RECORDS   1024 /* per thread, a power of two */
#define STEP_BURST_MAX     256
/* arm mode: every hit's step_record_t is also appended to the file PATH.PID (a bench's view of
 * which executions the arms take, bench/arm_starts.sh; unset: none) */
#define STEP_DUMP_ENV "DCPI_AGENT_DUMP"

/* record flags */
#define STEP_REC_EA    0x01u /* ea is valid */
#define STEP_REC_MEMRD 0x02u /* the instruction reads memory at ea; mem_before is valid */
#define STEP_REC_MEMWR 0x04u /* the instruction writes memory at ea; mem_after is valid */
#define STEP_REC_FIRST 0x08u /* first record of its burst */
#define STEP_REC_LAST  0x10u /* last record of its burst (end reason in end) */
#define STEP_REC_HIT                                                                               \
    0x20u /* arm mode: a breakpoint hit, the state BEFORE the instruction                          \
             (after = before; index = the target's index in the table) */

/*
 * The arm mode (DCPI_AGENT_MODE=arm; dcpid's inproc backend, core/values/inproc.c): dcpid
 * writes each process's table of targets (the run-time addresses of the instructions to take
 * value samples of) into its ring file; every thread of the process has a timer of its own CPU
 * time (a cpu-clock perf event that signals the thread itself, perf_event_attr.sigtrap) with a
 * random period of mean period_ns, and at each tick it arms up to STEP_ARM_SLOTS execute
 * breakpoints of its own (perf events kept open, re-targeted with
 * PERF_EVENT_IOC_MODIFY_ATTRIBUTES, enabled with PERF_EVENT_IOC_ENABLE, disabled at their hit)
 * on the table's targets in the procedure the tick interrupted, in turn when there are more;
 * an arm without a hit ends at the thread's next tick. A hit signals the thread synchronously;
 * its registers before the instruction, bytes and memory operand become one STEP_REC_HIT
 * record. The arm is made in the thread itself at the tick: no delay, no scheduler between the
 * random time and the arm. The table is written under a sequence count (odd while dcpid writes).
 */
#define STEP_ARM_MAX   16 /* targets in a process's table */
#define STEP_ARM_SLOTS 4  /* debug registers: breakpoints per thread */

typedef struct step_arm_table {
    _Atomic uint32_t seq; /* even: stable; odd: being written */
    uint32_t n;           /* targets (0: nothing to arm; ticks go on) */
    uint64_t period_ns;   /* mean tick period in ns of a thread's CPU (0: the agent's default) */
    uint64_t addr[STEP_ARM_MAX];
    /* the target's procedure [lo, hi): a tick arms only the targets of the procedure it
     * interrupted */
    uint64_t lo[STEP_ARM_MAX], hi[STEP_ARM_MAX];
    /* the chance that a tick in the target's procedure arms it, in 65536ths (STEP_TAKE_ALL:
     * always): dcpid thins the targets of the hot procedures so that a cold one gets as many
     * arms (inproc.c) */
    uint16_t take[STEP_ARM_MAX];
    /* the executions an arm of the target takes at most (0: DCPI_AGENT_HITS's, STEP_ARM_HITS):
     * dcpid asks fewer where the values of an arm's executions are alike (inproc.c) */
    uint8_t hits[STEP_ARM_MAX];
} step_arm_table_t;
#define STEP_TAKE_ALL 0xffffu

/* why a burst ended (index into the slot's end_count) */
enum step_end {
    STEP_END_DONE = 0, /* N instructions stepped */
    STEP_END_SYSCALL,  /* the next instruction is syscall/sysenter/int/int3/pushf/... */
    STEP_END_SIGNAL,   /* a signal of the program arrived */
    STEP_END_EXIT,     /* the thread or process ended (ptrace) */
    STEP_END_ERROR,    /* the instruction could not be read */
    STEP_END_COUNT
};

/* slot states */
#define STEP_SLOT_FREE 0u
#define STEP_SLOT_LIVE 1u
#define STEP_SLOT_DONE 2u /* the thread exited; dcpid frees the slot once drained */

typedef struct step_record {
    uint64_t time_ns; /* CLOCK_MONOTONIC at the burst's start */
    uint64_t burst;   /* burst number within the thread */
    uint32_t tid;
    uint16_t flags;   /* STEP_REC_* */
    uint8_t index;    /* position in the burst */
    uint8_t end;      /* enum step_end when STEP_REC_LAST */
    uint8_t insn[16]; /* bytes at before[DCPI_REG_IP] */
    uint8_t insn_len; /* bytes of insn that could be read (0..16) */
    uint8_t mem_size; /* bytes of the memory operand read (1..8) */
    /* a hit (STEP_REC_HIT): its place in its arm (1: the arm's first execution) and the arm's
     * number in the thread; the hits of one arm are one cluster of consecutive executions */
    uint16_t arm_hit;
    uint32_t arm_seq;
    uint64_t ea;
    uint64_t mem_before;
    uint64_t mem_after;
    uint64_t before[STEP_NREGS];
    uint64_t after[STEP_NREGS];
} step_record_t;

#define STEP_HANDLER_MAX_NS 1000000ull /* a handler run longer than this was descheduled */

typedef struct step_slot {
    _Atomic uint32_t state; /* STEP_SLOT_* */
    _Atomic uint32_t tid;
    _Atomic uint64_t head; /* records written (producer) */
    _Atomic uint64_t tail; /* records consumed (consumer) */
    _Atomic uint64_t bursts;
    _Atomic uint64_t steps;
    _Atomic uint64_t lost_bursts; /* bursts skipped: ring without room */
    _Atomic uint64_t end_count[STEP_END_COUNT];
    uint8_t pad[8];
    /* arm mode: ticks taken, breakpoints armed, hits recorded, arms left without a hit when
     * their breakpoint was re-targeted (expired), hits not recorded (dropped: their signal came
     * late, the ring was full, or a hit was lost while another signal of ours was pending);
     * handler_ns over handler_n: the time the thread spent in the agent's arm-mode handlers
     * (CLOCK_MONOTONIC, entry to return: what a tick and a hit cost inside the process as it
     * runs), handler_n the handler runs measured (one longer than STEP_HANDLER_MAX_NS, the
     * thread descheduled in it, is left out) */
    _Atomic uint64_t ticks, arms, hits, expired, dropped;
    _Atomic uint64_t handler_ns, handler_n;
    _Atomic uint64_t closes; /* ticks that only closed the arms left waiting (agent.c) */
    /* the time from one hit of the thread's arms to its next hit of them (whichever
     * breakpoint), when under STEP_GAP_MAX_NS (CLOCK_MONOTONIC): in a loop, what a hit costs the
     * thread, its trap and signal included, which no handler sees; gap_n such gaps */
    _Atomic uint64_t gap_ns, gap_n;
} step_slot_t;
#define STEP_GAP_MAX_NS 50000ull

typedef struct step_ring_header {
    uint32_t magic, version;
    uint32_t pid;
    uint32_t nslots, nrecords, record_size;
    uint32_t burst_len, rate, signo, pad0;
    uint64_t slots_offset, records_offset, file_size;
    _Atomic uint32_t ready;        /* 1 once the header is complete */
    _Atomic uint32_t lost_threads; /* threads that found no free slot */
    _Atomic uint64_t no_decoder;   /* steps without memory operand info (no Zydis) */
    uint8_t pad1[64];
    /* arm mode: 1 when the agent runs it; the first errno of perf_event_open or of an arm (0:
     * none) and the fewest breakpoints a thread got (STEP_ARM_SLOTS when all) */
    _Atomic uint32_t arm_mode, arm_errno, arm_bps, pad2;
    step_arm_table_t arms; /* written by dcpid */
    /* arms made on each of the table's targets by all threads (the agent adds), and what dcpid
     * has counted of them so far (only dcpid writes it) */
    _Atomic uint64_t arms_at[STEP_ARM_MAX];
    uint64_t arms_seen[STEP_ARM_MAX];
} step_ring_header_t;

static inline uint64_t step_ring_file_size(uint32_t nslots, uint32_t nrecords)
{
    return sizeof(step_ring_header_t) + (uint64_t)nslots * sizeof(step_slot_t) +
           (uint64_t)nslots * nrecords * sizeof(step_record_t);
}

/* Fill a header for a fresh (zeroed) mapping. */
static inline void step_ring_init(step_ring_header_t *h, uint32_t pid, uint32_t nslots,
                                  uint32_t nrecords)
{
    h->magic = STEP_RING_MAGIC;
    h->version = STEP_RING_VERSION;
    h->pid = pid;
    h->nslots = nslots;
    h->nrecords = nrecords;
    h->record_size = sizeof(step_record_t);
    h->slots_offset = sizeof(step_ring_header_t);
    h->records_offset = h->slots_offset + (uint64_t)nslots * sizeof(step_slot_t);
    h->file_size = step_ring_file_size(nslots, nrecords);
    h->arm_bps = STEP_ARM_SLOTS;
}

/* dcpid: publish a table of n (<= STEP_ARM_MAX) targets, their procedures, their chances (NULL:
 * STEP_TAKE_ALL), their executions an arm (NULL: 0, the agent's) and the mean tick period. */
static inline void step_arm_publish(step_ring_header_t *h, const uint64_t *addr, const uint64_t *lo,
                                    const uint64_t *hi, const uint16_t *take, const uint8_t *hits,
                                    uint32_t n, uint64_t period_ns)
{
    step_arm_table_t *t = &h->arms;
    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
    atomic_store_explicit(&t->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    t->n = n > STEP_ARM_MAX ? STEP_ARM_MAX : n;
    t->period_ns = period_ns;
    for (uint32_t i = 0; i < t->n; i++) {
        t->addr[i] = addr[i];
        t->lo[i] = lo[i];
        t->hi[i] = hi[i];
        t->take[i] = take ? take[i] : STEP_TAKE_ALL;
        t->hits[i] = hits ? hits[i] : 0;
    }
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
}

/* The agent: a consistent copy of the table (0), or -1 while dcpid is writing it. */
static inline int step_arm_read(const step_ring_header_t *h, step_arm_table_t *out)
{
    const step_arm_table_t *t = &h->arms;
    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (seq & 1)
        return -1;
    out->n = t->n > STEP_ARM_MAX ? STEP_ARM_MAX : t->n;
    out->period_ns = t->period_ns;
    for (uint32_t i = 0; i < out->n; i++) {
        out->addr[i] = t->addr[i];
        out->lo[i] = t->lo[i];
        out->hi[i] = t->hi[i];
        out->take[i] = t->take[i];
        out->hits[i] = t->hits[i];
    }
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&t->seq, memory_order_relaxed) == seq ? 0 : -1;
}

/* Whether a mapping of size bytes holds a consistent header (dcpid checks before use). */
static inline int step_ring_valid(const step_ring_header_t *h, uint64_t size)
{
    return size >= sizeof(*h) && h->magic == STEP_RING_MAGIC && h->version == STEP_RING_VERSION &&
           h->record_size == sizeof(step_record_t) && h->nslots > 0 && h->nslots <= 4096 &&
           h->nrecords > 0 && (h->nrecords & (h->nrecords - 1)) == 0 &&
           h->slots_offset == sizeof(step_ring_header_t) &&
           h->records_offset == h->slots_offset + (uint64_t)h->nslots * sizeof(step_slot_t) &&
           h->file_size == step_ring_file_size(h->nslots, h->nrecords) && h->file_size <= size;
}

static inline step_slot_t *step_ring_slot(step_ring_header_t *h, uint32_t i)
{
    return (step_slot_t *)((char *)h + h->slots_offset) + i;
}

static inline step_record_t *step_ring_record(step_ring_header_t *h, uint32_t slot, uint64_t n)
{
    step_record_t *base = (step_record_t *)((char *)h + h->records_offset);
    return base + (uint64_t)slot * h->nrecords + (n & (h->nrecords - 1));
}

/* Producer: room for k more records? */
static inline int step_ring_room(step_ring_header_t *h, step_slot_t *s, uint32_t k)
{
    uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    return head - tail + k <= h->nrecords;
}

/* Producer: the next record to fill (check room first), then publish it. */
static inline step_record_t *step_ring_next(step_ring_header_t *h, uint32_t slot)
{
    step_slot_t *s = step_ring_slot(h, slot);
    return step_ring_record(h, slot, atomic_load_explicit(&s->head, memory_order_relaxed));
}

static inline void step_ring_publish(step_slot_t *s)
{
    uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
    atomic_store_explicit(&s->head, head + 1, memory_order_release);
}

/* Consumer: the oldest unread record of a slot or NULL; release it with step_ring_consume. */
static inline const step_record_t *step_ring_peek(step_ring_header_t *h, uint32_t slot)
{
    step_slot_t *s = step_ring_slot(h, slot);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
    return head == tail ? NULL : step_ring_record(h, slot, tail);
}

static inline void step_ring_consume(step_slot_t *s)
{
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
    atomic_store_explicit(&s->tail, tail + 1, memory_order_release);
}

#endif
