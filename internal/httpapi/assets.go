package httpapi

import (
	"net/http"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
)

// assetRoutes registers the 21 asset library endpoints (POST, Bearer key, JSON body) and the
// end-user verification page (its token is the credential).
func (s *Server) assetRoutes() {
	for _, op := range s.assets.Operations() {
		s.handle("POST "+op.Path, s.auth(s.assetOp(op)))
	}
	s.handle("GET "+asset.VerifyPath+"{token}", s.perClient(s.verifyRates, s.verifyPage))
	s.handle("POST "+asset.VerifyPath+"{token}/{action}", s.perClient(s.verifyRates, s.verifyAction))
}

func errAssetsUnavailable() *apierr.Error {
	return apierr.New(apierr.KindUnavailable, "The asset library is not available on this server. Contact the operator.")
}

// assetOp adapts one asset operation: the caller's tenant scopes everything it touches.
func (s *Server) assetOp(op asset.Operation) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.assets == nil {
			return errAssetsUnavailable()
		}
		body, err := s.readJSONBody(w, r)
		if err != nil {
			return err
		}
		p, _ := CallerFrom(r.Context())
		out, err := op.Run(r.Context(), p, body)
		if err != nil {
			return err
		}
		writeJSON(w, op.Status, out)
		return nil
	}
}
