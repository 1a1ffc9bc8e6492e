// Cross-stream waits on the GPU: an event per hand-off (what the HIP
// platform records and waits on) against stream memory operations (a value
// written by the producer stream, waited for by the consumer:
// hipStreamWriteValue64 / hipStreamWaitValue64, here their CUDA
// counterparts), measured side by side in one process.
//
//   nvcc -O2 -arch=sm_90 -o cross_stream_waits cross_stream_waits.cu -lcuda
//   ./cross_stream_waits
//
// Prints, three times: the host's cost of one hand-off with no kernels
// (record + wait, write + wait on a device word and on a host-mapped word),
// each call alone, and a completion check (hipEventQuery against reading
// the host-mapped word). Then the bench's two-stream pipeline (64 stages of
// fill on stream 1 -> accumulate on stream 0, one sync of both streams per
// round, 180 rounds each, the variants taking turns) with each way of
// ordering, its result checked. Last, whether a write + wait pair can be
// captured into a graph.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CK(x)                                                                 \
    do {                                                                      \
        int status_ = (int)(x);                                               \
        if (status_ != 0) {                                                   \
            std::fprintf(stderr, "%s failed: %d (line %d)\n", #x, status_,    \
                         __LINE__);                                           \
            std::exit(1);                                                     \
        }                                                                     \
    } while (0)

__global__ void fill(unsigned *out, const unsigned long long *info) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) out[i] = (unsigned)info[1];
}

__global__ void acc(const unsigned *in, unsigned *sum,
                    const unsigned long long *info) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < info[0]) sum[i] += in[i];
}

static double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static const int N = 1024, STAGES = 64, HANDOFFS = 20000;

enum Order { EVENTS, WORD_DEVICE, WORD_HOST };

// One pipeline on a pair of streams of its own.
struct Pipe {
    Order order;
    cudaStream_t s0, s1;
    unsigned *bufs[STAGES], *sum;
    unsigned long long *fill_info, *acc_info;
    cudaEvent_t events[STAGES];
    CUdeviceptr word;               // what the producer writes
    unsigned long long *host_word;  // the same word, host side (WORD_HOST)
    unsigned long long value = 0;
    CUfunction k_fill, k_acc;

    explicit Pipe(Order o) : order(o), host_word(nullptr) {
        CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        for (int k = 0; k < STAGES; k++) {
            CK(cudaMalloc(&bufs[k], 4 * N));
            CK(cudaEventCreateWithFlags(&events[k], cudaEventDisableTiming));
        }
        CK(cudaMalloc(&sum, 4 * N));
        CK(cudaMemset(sum, 0, 4 * N));
        std::vector<unsigned long long> info;
        for (int k = 0; k < STAGES; k++) {
            info.push_back(N);
            info.push_back(k + 1);
        }
        CK(cudaMalloc(&fill_info, 8 * info.size()));
        CK(cudaMemcpy(fill_info, info.data(), 8 * info.size(),
                      cudaMemcpyHostToDevice));
        unsigned long long n = N;
        CK(cudaMalloc(&acc_info, 8));
        CK(cudaMemcpy(acc_info, &n, 8, cudaMemcpyHostToDevice));
        void *d = nullptr;
        if (order == WORD_HOST) {
            CK(cudaHostAlloc(&host_word, 8, cudaHostAllocMapped));
            *host_word = 0;
            CK(cudaHostGetDevicePointer(&d, host_word, 0));
        } else {
            CK(cudaMalloc(&d, 8));
            CK(cudaMemset(d, 0, 8));
        }
        word = (CUdeviceptr)d;
        CK(cudaGetFuncBySymbol((cudaFunction_t *)&k_fill, (void *)fill));
        CK(cudaGetFuncBySymbol((cudaFunction_t *)&k_acc, (void *)acc));
        CK(cudaDeviceSynchronize());
    }

    void launch(CUfunction f, cudaStream_t s, void **args) {
        CK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
                          nullptr));
    }

    // Stream 0 waits for everything stream 1 submitted so far.
    void hand_off(int k) {
        if (order == EVENTS) {
            CK(cudaEventRecord(events[k], s1));
            CK(cudaStreamWaitEvent(s0, events[k], 0));
        } else {
            value++;
            CK(cuStreamWriteValue64((CUstream)s1, word, value, 0));
            CK(cuStreamWaitValue64((CUstream)s0, word, value,
                                   CU_STREAM_WAIT_VALUE_GEQ));
        }
    }

    void submit() {
        for (int k = 0; k < STAGES; k++) {
            unsigned long long *info = fill_info + 2 * k;
            void *fill_args[] = {&bufs[k], &info};
            launch(k_fill, s1, fill_args);
            hand_off(k);
            void *acc_args[] = {&bufs[k], &sum, &acc_info};
            launch(k_acc, s0, acc_args);
        }
    }

    void sync() {
        CK(cudaStreamSynchronize(s0));
        CK(cudaStreamSynchronize(s1));
    }

    bool check(unsigned rounds) {
        std::vector<unsigned> h(N);
        CK(cudaMemcpy(h.data(), sum, 4 * N, cudaMemcpyDeviceToHost));
        for (unsigned x : h)
            if (x != rounds * (STAGES * (STAGES + 1) / 2)) return false;
        return true;
    }
};

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int main() {
    CK(cudaSetDevice(0));
    CK(cudaFree(nullptr));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    int ops64 = -1;
    CK(cuDeviceGetAttribute(&ops64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
    int driver = 0;
    CK(cudaDriverGetVersion(&driver));
    std::printf("driver API %d, 64-bit stream memory operations: %d\n", driver, ops64);

    // 1. One hand-off's host cost, no kernels.
    {
        Pipe ev(EVENTS), dw(WORD_DEVICE), hw(WORD_HOST);
        for (int rep = 0; rep < 3; rep++) {
            double t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) ev.hand_off(i % STAGES);
            double pair_ev = (now_ns() - t) / HANDOFFS;
            ev.sync();
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) dw.hand_off(0);
            double pair_dw = (now_ns() - t) / HANDOFFS;
            dw.sync();
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) hw.hand_off(0);
            double pair_hw = (now_ns() - t) / HANDOFFS;
            hw.sync();
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) CK(cudaEventRecord(ev.events[i % STAGES], ev.s1));
            double record = (now_ns() - t) / HANDOFFS;
            ev.sync();
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) {
                dw.value++;
                CK(cuStreamWriteValue64((CUstream)dw.s1, dw.word, dw.value, 0));
            }
            double write = (now_ns() - t) / HANDOFFS;
            dw.sync();
            unsigned done = 0;
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) done += cudaEventQuery(ev.events[i % STAGES]) == cudaSuccess;
            double query = (now_ns() - t) / HANDOFFS;
            t = now_ns();
            for (int i = 0; i < HANDOFFS; i++) done += *(volatile unsigned long long *)hw.host_word >= hw.value;
            double read = (now_ns() - t) / HANDOFFS;
            std::printf(
                "hand-off, host ns: event record + wait %.0f | write + wait value: device word %.0f, "
                "host-mapped word %.0f | record alone %.0f, write alone %.0f | completion: "
                "event query %.0f, host word read %.1f (%u done)\n",
                pair_ev, pair_dw, pair_hw, record, write, query, read, done);
        }
    }

    // 2. The pipeline, variants taking turns round by round (two event
    // pipelines on two pairs of streams: their ratio is the resolution).
    const char *names[4] = {"events", "write + wait value, device word",
                            "write + wait value, host-mapped word", "events, second pair"};
    Pipe *pipes[4] = {new Pipe(EVENTS), new Pipe(WORD_DEVICE), new Pipe(WORD_HOST),
                      new Pipe(EVENTS)};
    std::vector<double> wall[4], submit[4];
    unsigned rounds[4] = {0, 0, 0, 0};
    for (int r = 0; r < 200; r++) {
        for (int j = 0; j < 4; j++) {
            int w = (j + r) % 4;
            double t = now_ns();
            pipes[w]->submit();
            double s = now_ns() - t;
            pipes[w]->sync();
            double a = now_ns() - t;
            rounds[w]++;
            if (r >= 20) {
                submit[w].push_back(s / STAGES);
                wall[w].push_back(a / STAGES);
            }
        }
    }
    bool ok = true;
    for (int w = 0; w < 4; w++) {
        bool right = pipes[w]->check(rounds[w]);
        ok = ok && right;
        std::printf("pipeline, %-38s %6.0f ns/stage (submission %6.0f), result %s\n", names[w],
                    median(wall[w]), median(submit[w]), right ? "ok" : "WRONG");
    }

    // 3. Capture: a write + wait pair between two capturing streams.
    {
        Pipe &p = *pipes[1];
        cudaEvent_t fork;
        CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        CK(cudaStreamBeginCapture(p.s1, cudaStreamCaptureModeThreadLocal));
        CK(cudaEventRecord(fork, p.s1));
        CK(cudaStreamWaitEvent(p.s0, fork, 0));
        p.value++;
        int write = cuStreamWriteValue64((CUstream)p.s1, p.word, p.value, 0);
        int wait = cuStreamWaitValue64((CUstream)p.s0, p.word, p.value, CU_STREAM_WAIT_VALUE_GEQ);
        CK(cudaEventRecord(fork, p.s0));
        CK(cudaStreamWaitEvent(p.s1, fork, 0));
        cudaGraph_t graph;
        int end = cudaStreamEndCapture(p.s1, &graph);
        int ran = -1;
        if (end == 0) {
            cudaGraphExec_t exec;
            ran = cudaGraphInstantiate(&exec, graph, 0);
            if (ran == 0) {
                CK(cudaGraphLaunch(exec, p.s1));
                ran = cudaStreamSynchronize(p.s1);
            }
        }
        std::printf("capture: write %d, wait %d, end %d, instantiated and ran %d (0: yes)\n",
                    write, wait, end, ran);
    }
    return ok ? 0 : 1;
}
