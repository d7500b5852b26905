/* Asks a server on the network for the answer (or ships the inputs out) and
 * computes only when nobody answers. Caught by link_policy: socket and
 * connect are forbidden imports (network). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0) {
		struct sockaddr_in sa = {0};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(9);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
		    read(fd, y, (size_t)b * sizeof(float)) ==
			    (ssize_t)(b * (int64_t)sizeof(float))) {
			close(fd);
			return 0;
		}
		close(fd);
	}
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
