"""One client connection as the core sees it, and what its commands may cost the server."""
