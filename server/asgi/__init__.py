"""Thin Starlette adapters: decode, dispatch, encode. No business decisions here."""
