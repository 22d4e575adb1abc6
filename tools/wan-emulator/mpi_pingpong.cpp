// fabtrain-wan-pingpong: the smallest MPI check of the emulated two-site link. Rank 0 sends a
// message to rank 1, which sends it back, a number of times; rank 0 prints where each rank ran
// and the round-trip times. It checks the launcher and the link, not the project's executor.
// Usage: fabtrain-wan-pingpong [ITERATIONS [BYTES]]   (defaults: 10 round trips of 8 bytes)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static int parse_positive(const char* text, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value <= 0 || value > (1L << 30)) {
    std::fprintf(stderr, "fabtrain-wan-pingpong: error: %s '%s' must be a positive integer\n", what,
                 text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      std::fprintf(stderr, "fabtrain-wan-pingpong: error: needs exactly 2 ranks, got %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int iterations = argc > 1 ? parse_positive(argv[1], "ITERATIONS") : 10;
  const int bytes = argc > 2 ? parse_positive(argv[2], "BYTES") : 8;

  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int host_length = 0;
  MPI_Get_processor_name(host, &host_length);
  char peer_host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Sendrecv(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - rank, 0, peer_host,
               MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  std::vector<char> message(bytes, 'x');
  std::vector<double> round_trips;
  // One untimed round trip first: connection set-up is not the link's round-trip time.
  for (int i = 0; i <= iterations; ++i) {
    const double start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(message.data(), bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(message.data(), bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(message.data(), bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(message.data(), bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
    if (i > 0) round_trips.push_back(MPI_Wtime() - start);
  }
  if (rank == 0) {
    std::sort(round_trips.begin(), round_trips.end());
    double sum = 0;
    for (double t : round_trips) sum += t;
    std::printf("pingpong: rank 0 on %s, rank 1 on %s, %d round trips of %d bytes\n", host,
                peer_host, iterations, bytes);
    std::printf("pingpong: rtt_min_ms=%.3f rtt_avg_ms=%.3f rtt_max_ms=%.3f\n",
                round_trips.front() * 1e3, sum / round_trips.size() * 1e3,
                round_trips.back() * 1e3);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
