"""What an operator watches: metrics, logs and liveness."""
